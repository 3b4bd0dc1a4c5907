import { Args } from '@oclif/core'
import { TsqCommand } from '../../cli/base-command.js'
import { withDedupStore } from '../../cli/dedup-store.js'
import { CliError } from '../../cli/errors.js'
import { lockFlags } from '../../cli/lock-store.js'

export default class DedupRm extends TsqCommand<{ removed: string }> {
  static summary = 'Release a dedup id: the next send with it is sent, whatever stands for it now.'
  static args = { key: Args.string({ description: 'The dedup id as `tsq dedup ls` lists it: <task name>:<id>.', required: true }) }
  static flags = { ...lockFlags }
  static examples = ['<%= config.bin %> dedup rm proj.refresh:user-42 -b redis://localhost:6379/0']

  async run(): Promise<{ removed: string }> {
    const { args, flags } = await this.parse(DedupRm)
    const config = await this.clientConfig(flags)
    const removed = await withDedupStore(config, flags['lock-url'], (store) => store.remove(args.key))
    if (!removed) throw new CliError('BAD_ARGUMENT', `no dedup id ${JSON.stringify(args.key)} is standing`)
    if (!this.jsonEnabled() && !flags.quiet) this.log(`released ${args.key}`)
    return { removed: args.key }
  }
}
