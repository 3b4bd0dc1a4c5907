import { TsqCommand } from '../cli/base-command.js'
import { broadcastDescription, methodArg, remoteFlags } from '../cli/flags/oclif-flags.js'
import { runRemote } from '../cli/remote-command.js'
import type { NodeReply } from '../transport/index.js'

export default class Inspect extends TsqCommand<NodeReply | NodeReply[]> {
  static summary = 'Inspect workers at runtime (ping, stats, active, active_queues, registered, ...).'
  static description = broadcastDescription('inspect')
  static strict = false
  static args = { method: methodArg('inspect') }
  static flags = { ...remoteFlags }
  static examples = [
    '<%= config.bin %> inspect ping',
    '<%= config.bin %> inspect active_queues -d w1@host --json',
    '<%= config.bin %> inspect query_task 1b1c... 2d2e...',
  ]

  async run(): Promise<NodeReply | NodeReply[]> {
    const { args, argv, flags } = await this.parse(Inspect)
    return runRemote({
      kind: 'inspect',
      method: args.method,
      words: (argv as string[]).slice(1),
      flags,
      ...(await this.remoteTarget(flags)),
    })
  }
}
