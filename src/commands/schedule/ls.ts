import { TsqCommand } from '../../cli/base-command.js'
import { rowOf, type EntryRow } from '../../beat/index.js'
import { storeFlags, storeFromFlags, zoneOf } from '../../cli/flags/beat-store-flags.js'

export default class ScheduleLs extends TsqCommand<EntryRow[]> {
  static summary = 'List periodic entries (a table, or --json).'
  static flags = { ...storeFlags }

  async run(): Promise<EntryRow[]> {
    const { flags } = await this.parse(ScheduleLs)
    const store = await storeFromFlags(flags)
    let rows: EntryRow[]
    try {
      const zone = zoneOf(flags)
      rows = (await store.list()).map((e) => rowOf(e, zone))
    } finally {
      await store.close()
    }
    if (!this.jsonEnabled()) {
      if (rows.length === 0) {
        this.log('no entries')
        return rows
      }
      const { default: Table } = await import('cli-table3')
      const table = new Table({
        head: ['name', 'task', 'schedule', 'enabled', 'runs', 'last run', 'next run'],
        style: { head: [], border: [] },
      })
      for (const r of rows)
        table.push([r.name, r.task, r.schedule, r.enabled ? 'yes' : 'no', r.total_run_count, r.last_run_at ?? '-', r.next_run_at ?? '-'])
      this.log(table.toString())
    }
    return rows
  }
}
