import { Args } from '@oclif/core'
import { TsqCommand } from '../../cli/base-command.js'
import { UsageError } from '../../cli/errors.js'
import { definitionFromFlags, rowOf, type EntryRow } from '../../beat/index.js'
import { storeFlags, storeFromFlags, zoneOf } from '../../cli/flags/beat-store-flags.js'
import { entryFlags, entryFlagsOf } from './add.js'

export default class ScheduleSet extends TsqCommand<EntryRow> {
  static summary = 'Change an entry (task, schedule, arguments, queue); its run history is kept.'
  static args = { name: Args.string({ description: 'Entry name.', required: true }) }
  static flags = { ...storeFlags, ...entryFlags }
  static examples = [
    '<%= config.bin %> schedule set ping --every 30',
    "<%= config.bin %> schedule set report --cron '0 9 * * mon-fri' --queue reports",
  ]

  async run(): Promise<EntryRow> {
    const { args, flags } = await this.parse(ScheduleSet)
    const store = await storeFromFlags(flags)
    try {
      const current = await store.get(args.name)
      if (!current) throw new UsageError(`no entry named ${JSON.stringify(args.name)}`)
      await store.save(definitionFromFlags(args.name, entryFlagsOf(flags), current.definition))
      const row = rowOf((await store.get(args.name))!, zoneOf(flags))
      if (!this.jsonEnabled() && !flags.quiet) this.log(`updated ${args.name}: ${row.task} ${row.schedule}`)
      return row
    } finally {
      await store.close()
    }
  }
}
