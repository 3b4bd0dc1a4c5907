import { TsqCommand } from '../cli/base-command.js'
import { remoteFlags } from '../cli/flags/oclif-flags.js'
import { runStatus } from '../cli/remote-command.js'
import type { NodeReply } from '../transport/index.js'

export default class Status extends TsqCommand<NodeReply> {
  static summary = 'List the workers that are online (ping everyone).'
  static flags = { ...remoteFlags }
  static examples = ['<%= config.bin %> status', '<%= config.bin %> status -b redis://127.0.0.1:6379/0 --json']

  async run(): Promise<NodeReply> {
    const { flags } = await this.parse(Status)
    return runStatus({ flags, ...(await this.remoteTarget(flags)) })
  }
}
