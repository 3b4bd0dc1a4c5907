import { Args } from '@oclif/core'
import { TsqCommand } from '../cli/base-command.js'
import { runRemote } from '../cli/remote-command.js'
import { remoteFlags } from '../cli/oclif-flags.js'
import type { NodeReply } from '../transport/index.js'

export default class Inspect extends TsqCommand<NodeReply | NodeReply[]> {
  static summary = 'Inspect workers at runtime (ping, stats, active, active_queues, registered, ...).'
  static description =
    "Broadcasts an inspect command and prints each node's reply as Celery does. Any other method name is sent as a custom command; arguments of custom commands are key=value words."
  static strict = false
  static args = {
    method: Args.string({
      required: true,
      description:
        'ping, clock, stats, active, scheduled, reserved, revoked, registered, query_task, conf, report, active_queues, memsample, memdump, objgraph, or a custom command',
    }),
  }
  static flags = { ...remoteFlags }
  static examples = [
    '<%= config.bin %> inspect ping',
    '<%= config.bin %> inspect active_queues -d w1@host --json',
    '<%= config.bin %> inspect query_task 1b1c... 2d2e...',
  ]

  async run(): Promise<NodeReply | NodeReply[]> {
    const { args, argv, flags } = await this.parse(Inspect)
    const config = await this.clientConfig(flags)
    return runRemote({
      kind: 'inspect',
      method: args.method,
      words: (argv as string[]).slice(1),
      flags,
      brokerUrl: config.brokerUrl,
      transportSettings: config.transportSettings,
      json: this.jsonEnabled(),
      color: this.color,
      print: (line) => this.log(line),
    })
  }
}
