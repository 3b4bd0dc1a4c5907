import { Args } from '@oclif/core'
import { TsqCommand } from '../cli/base-command.js'
import { controlFlags } from '../cli/oclif-flags.js'
import { controlExtraArguments, runRemote } from '../cli/remote-command.js'
import type { NodeReply } from '../transport/index.js'

export default class Control extends TsqCommand<NodeReply | NodeReply[]> {
  static summary = 'Control workers at runtime (revoke, terminate, rate_limit, time_limit, add_consumer, shutdown, ...).'
  static description =
    "Broadcasts a control command and prints each node's reply as Celery does. Any other method name is sent as a custom command; arguments of custom commands are key=value words."
  static strict = false
  static args = {
    method: Args.string({
      required: true,
      description:
        'revoke, terminate, rate_limit, time_limit, enable_events, disable_events, heartbeat, add_consumer, cancel_consumer, pool_grow, pool_shrink, pool_restart, autoscale, election, shutdown, or a custom command',
    }),
  }
  static flags = { ...controlFlags }
  static examples = [
    '<%= config.bin %> control revoke 1b1c... --terminate --signal SIGKILL',
    '<%= config.bin %> control rate_limit proj.add 10/m -d w1@host',
    '<%= config.bin %> control add_consumer images',
    '<%= config.bin %> control shutdown -d w1@host',
  ]

  async run(): Promise<NodeReply | NodeReply[]> {
    const { args, argv, flags } = await this.parse(Control)
    const config = await this.clientConfig(flags)
    return runRemote({
      kind: 'control',
      method: args.method,
      words: (argv as string[]).slice(1),
      extraArguments: controlExtraArguments(args.method, flags),
      flags,
      brokerUrl: config.brokerUrl,
      transportSettings: config.transportSettings,
      json: this.jsonEnabled(),
      color: this.color,
      print: (line) => this.log(line),
    })
  }
}
