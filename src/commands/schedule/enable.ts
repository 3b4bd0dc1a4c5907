import { Args } from '@oclif/core'
import { TsqCommand } from '../../cli/base-command.js'
import { UsageError } from '../../cli/errors.js'
import { rowOf, type EntryRow } from '../../beat/index.js'
import { storeFlags, storeFromFlags, zoneOf } from '../../cli/flags/beat-store-flags.js'

export default class ScheduleEnable extends TsqCommand<EntryRow> {
  static summary = 'Enable an entry (running beats follow within their loop interval).'
  static args = { name: Args.string({ description: 'Entry name.', required: true }) }
  static flags = { ...storeFlags }

  async run(): Promise<EntryRow> {
    const { args, flags } = await this.parse(ScheduleEnable)
    const store = await storeFromFlags(flags)
    try {
      const current = await store.get(args.name)
      if (!current) throw new UsageError(`no entry named ${JSON.stringify(args.name)}`)
      await store.save({ ...current.definition, enabled: true })
      if (!this.jsonEnabled() && !flags.quiet) this.log(`enabled ${args.name}`)
      return rowOf((await store.get(args.name))!, zoneOf(flags))
    } finally {
      await store.close()
    }
  }
}
