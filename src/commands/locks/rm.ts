import { Args, Flags } from '@oclif/core'
import { TsqCommand } from '../../cli/base-command.js'
import { CliError, UsageError } from '../../cli/errors.js'
import { lockFlags, withLockStore } from '../../cli/lock-store.js'

export default class LocksRm extends TsqCommand<{ removed: string }> {
  static summary = "Free a task lock whoever holds it: the holder's task is told through its AbortSignal at its next renewal."
  static args = { id: Args.string({ description: 'Lock id (as `tsq locks ls` lists it).', required: true }) }
  static flags = {
    ...lockFlags,
    force: Flags.boolean({ char: 'f', description: 'Do not ask for confirmation (required when stdin is not a terminal).' }),
  }

  async run(): Promise<{ removed: string }> {
    const { args, flags } = await this.parse(LocksRm)
    const config = await this.clientConfig(flags)
    if (!flags.force) {
      if (!process.stdin.isTTY)
        throw new UsageError('refusing to remove a lock without confirmation: stdin is not a terminal, pass -f/--force')
      const { confirm } = await import('@inquirer/prompts')
      const sure = await confirm({
        message: `Free lock ${args.id}? Another run of its task may start while the holder still runs.`,
        default: false,
      })
      if (!sure) throw new UsageError('not removed')
    }
    const removed = await withLockStore(config, flags['lock-url'], (store) => store.remove(args.id))
    if (!removed) throw new CliError('BAD_ARGUMENT', `no lock ${JSON.stringify(args.id)} is held`)
    if (!this.jsonEnabled() && !flags.quiet) this.log(`removed ${args.id}`)
    return { removed: args.id }
  }
}
