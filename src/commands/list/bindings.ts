import { Flags } from '@oclif/core'
import { formatBindings, listBindings, type BindingRow } from '../../admin/index.js'
import { TsqCommand } from '../../cli/base-command.js'

export default class ListBindings extends TsqCommand<BindingRow[]> {
  static summary = 'List the queue bindings: queue, exchange and routing key.'
  static description =
    "Redis and file://: read from the broker (kombu's _kombu.binding.<exchange> sets on Redis). RabbitMQ: from its management HTTP API (`rabbitmq-plugins enable rabbitmq_management`), by default at the broker's host, port 15672, with the broker's user and password."
  static flags = {
    'management-url': Flags.string({
      description: "RabbitMQ's management API, e.g. http://user:pass@host:15672 (default: the broker's host, port 15672 and credentials).",
    }),
  }
  static examples = [
    '<%= config.bin %> -b redis://127.0.0.1:6379/0 list bindings',
    '<%= config.bin %> list bindings --management-url http://admin:secret@rabbit:15672 --json',
  ]

  async run(): Promise<BindingRow[]> {
    const { flags } = await this.parse(ListBindings)
    const config = await this.clientConfig(flags)
    const rows = await listBindings(config.brokerUrl, { settings: config.transportSettings, managementUrl: flags['management-url'] })
    if (!this.jsonEnabled() && !flags.quiet) for (const line of formatBindings(rows)) this.log(line)
    return rows
  }
}
