import { TsqCommand } from '../../cli/base-command.js'
import { dedupRow, withDedupStore, type DedupRow } from '../../cli/dedup-store.js'
import { lockFlags } from '../../cli/lock-store.js'

export default class DedupLs extends TsqCommand<DedupRow[]> {
  static summary = 'List the dedup ids standing now: the task each stands for and its time left (a table, or --json).'
  static flags = { ...lockFlags }
  static examples = ['<%= config.bin %> dedup ls -b redis://localhost:6379/0', '<%= config.bin %> dedup ls --json']

  async run(): Promise<DedupRow[]> {
    const { flags } = await this.parse(DedupLs)
    const config = await this.clientConfig(flags)
    const rows = (await withDedupStore(config, flags['lock-url'], (store) => store.list())).map((l) => dedupRow(l))
    if (!this.jsonEnabled()) {
      if (rows.length === 0) {
        if (!flags.quiet) this.log('no dedup ids standing')
        return rows
      }
      const { default: Table } = await import('cli-table3')
      const table = new Table({ head: ['dedup id', 'mode', 'task id', 'ttl left', 'eta', 'state'], style: { head: [], border: [] } })
      for (const r of rows)
        table.push([
          r.key,
          r.mode,
          r.taskId,
          r.ttlLeftS === null ? 'until it ends' : `${r.ttlLeftS}s`,
          r.eta ?? '-',
          r.started ? 'started' : r.eta ? 'delayed' : 'queued',
        ])
      this.log(table.toString())
    }
    return rows
  }
}
