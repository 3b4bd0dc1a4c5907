import { Args } from '@oclif/core'
import { TsqCommand } from '../../cli/base-command.js'
import { CliError } from '../../cli/errors.js'
import { lockFlags, lockRow, withLockStore, type LockRow } from '../../cli/lock-store.js'

export default class LocksShow extends TsqCommand<LockRow> {
  static summary = 'Show one task lock: its holder, task, age, lease left and fencing token.'
  static args = { id: Args.string({ description: 'Lock id (as `tsq locks ls` lists it).', required: true }) }
  static flags = { ...lockFlags }

  async run(): Promise<LockRow> {
    const { args, flags } = await this.parse(LocksShow)
    const config = await this.clientConfig(flags)
    const found = await withLockStore(config, flags['lock-url'], (store) => store.get(args.id))
    if (!found) throw new CliError('BAD_ARGUMENT', `no lock ${JSON.stringify(args.id)} is held`)
    const row = lockRow(found)
    if (!this.jsonEnabled()) {
      for (const [k, v] of Object.entries(row)) this.log(`${k.padEnd(10)} ${v ?? '-'}`)
    }
    return row
  }
}
