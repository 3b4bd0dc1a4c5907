import { TsqCommand } from '../cli/base-command.js'
import { broadcastDescription, controlFlags, methodArg } from '../cli/flags/oclif-flags.js'
import { runRemote } from '../cli/remote-command.js'
import type { NodeReply } from '../transport/index.js'

export default class Control extends TsqCommand<NodeReply | NodeReply[]> {
  static summary = 'Control workers at runtime (revoke, terminate, rate_limit, time_limit, add_consumer, shutdown, ...).'
  static description = broadcastDescription('control')
  static strict = false
  static args = { method: methodArg('control') }
  static flags = { ...controlFlags }
  static examples = [
    '<%= config.bin %> control revoke 1b1c... --terminate --signal SIGKILL',
    '<%= config.bin %> control rate_limit proj.add 10/m -d w1@host',
    '<%= config.bin %> control add_consumer images',
    '<%= config.bin %> control shutdown -d w1@host',
  ]

  async run(): Promise<NodeReply | NodeReply[]> {
    const { args, argv, flags } = await this.parse(Control)
    return runRemote({
      kind: 'control',
      method: args.method,
      words: (argv as string[]).slice(1),
      flags,
      ...(await this.remoteTarget(flags)),
    })
  }
}
