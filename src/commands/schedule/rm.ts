import { Args } from '@oclif/core'
import { TsqCommand } from '../../cli/base-command.js'
import { UsageError } from '../../cli/errors.js'
import { storeFlags, storeFromFlags } from '../../cli/flags/beat-store-flags.js'

export default class ScheduleRm extends TsqCommand<{ removed: string }> {
  static summary = 'Remove an entry.'
  static args = { name: Args.string({ description: 'Entry name.', required: true }) }
  static flags = { ...storeFlags }

  async run(): Promise<{ removed: string }> {
    const { args, flags } = await this.parse(ScheduleRm)
    const store = await storeFromFlags(flags)
    try {
      if (!(await store.remove(args.name))) throw new UsageError(`no entry named ${JSON.stringify(args.name)}`)
      if (!this.jsonEnabled() && !flags.quiet) this.log(`removed ${args.name}`)
      return { removed: args.name }
    } finally {
      await store.close()
    }
  }
}
