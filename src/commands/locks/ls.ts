import { TsqCommand } from '../../cli/base-command.js'
import { lockFlags, lockRow, withLockStore, type LockRow } from '../../cli/lock-store.js'

export default class LocksLs extends TsqCommand<LockRow[]> {
  static summary = 'List the task locks held now (a table, or --json).'
  static flags = { ...lockFlags }
  static examples = ['<%= config.bin %> locks ls -b redis://localhost:6379/0', '<%= config.bin %> locks ls --json']

  async run(): Promise<LockRow[]> {
    const { flags } = await this.parse(LocksLs)
    const config = await this.clientConfig(flags)
    const rows = (await withLockStore(config, flags['lock-url'], (store) => store.list())).map((l) => lockRow(l))
    if (!this.jsonEnabled()) {
      if (rows.length === 0) {
        if (!flags.quiet) this.log('no locks held')
        return rows
      }
      const { default: Table } = await import('cli-table3')
      const table = new Table({
        head: ['lock id', 'task', 'holder', 'task id', 'age', 'lease left', 'token'],
        style: { head: [], border: [] },
      })
      for (const r of rows)
        table.push([r.id, r.task ?? '-', `${r.node} (pid ${r.pid})`, r.taskId ?? '-', `${r.ageS}s`, `${r.leftS}s of ${r.leaseS}s`, r.token])
      this.log(table.toString())
    }
    return rows
  }
}
