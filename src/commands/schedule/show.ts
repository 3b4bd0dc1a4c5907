import { Args } from '@oclif/core'
import { TsqCommand } from '../../cli/base-command.js'
import { UsageError } from '../../cli/errors.js'
import { rowOf, type EntryRow } from '../../beat/index.js'
import { storeFlags, storeFromFlags, zoneOf } from '../../cli/flags/beat-store-flags.js'

export default class ScheduleShow extends TsqCommand<EntryRow> {
  static summary = 'Show one entry: definition, run count, last and next run.'
  static args = { name: Args.string({ description: 'Entry name.', required: true }) }
  static flags = { ...storeFlags }

  async run(): Promise<EntryRow> {
    const { args, flags } = await this.parse(ScheduleShow)
    const store = await storeFromFlags(flags)
    try {
      const entry = await store.get(args.name)
      if (!entry) throw new UsageError(`no entry named ${JSON.stringify(args.name)}`)
      const row = rowOf(entry, zoneOf(flags))
      if (!this.jsonEnabled()) {
        for (const [k, v] of Object.entries(row)) this.log(`${k.padEnd(16)} ${typeof v === 'string' ? v : JSON.stringify(v)}`)
      }
      return row
    } finally {
      await store.close()
    }
  }
}
