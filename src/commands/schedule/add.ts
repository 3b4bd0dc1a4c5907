import { Args, Flags } from '@oclif/core'
import { TsqCommand } from '../../cli/base-command.js'
import { integerFlag } from '../../cli/flags/oclif-flags.js'
import { UsageError } from '../../cli/errors.js'
import { definitionFromFlags, rowOf, type EntryFlags, type EntryRow } from '../../beat/index.js'
import { storeFlags, storeFromFlags, zoneOf } from '../../cli/flags/beat-store-flags.js'

export const entryFlags = {
  task: Flags.string({ char: 't', description: 'Task name, e.g. proj.add.' }),
  every: Flags.string({ description: 'Run every SECONDS.' }),
  cron: Flags.string({ description: "Crontab 'm h dom mon dow' (Celery semantics: dom AND dow, sun=0, fri-mon wraps)." }),
  solar: Flags.string({
    description:
      "Celery's solar schedule EVENT:LAT,LON, e.g. sunrise:51.5,-0.12 (dawn_astronomical|dawn_nautical|dawn_civil|sunrise|solar_noon|sunset|dusk_civil|dusk_nautical|dusk_astronomical).",
  }),
  relative: Flags.boolean({ description: "Celery's relative interval: round due times down to the interval's resolution.", allowNo: true }),
  args: Flags.string({ description: 'Positional arguments, a JSON array.' }),
  kwargs: Flags.string({ description: 'Keyword arguments, a JSON object.' }),
  queue: Flags.string({ char: 'Q', description: 'Queue to send to (default celery).' }),
  priority: integerFlag({ description: 'Message priority.' }),
  expires: Flags.string({ description: 'Seconds after sending when the task expires.' }),
}

export function entryFlagsOf(flags: Record<string, unknown>): EntryFlags {
  const pick = <K extends keyof EntryFlags>(k: K) => (flags[k] === undefined ? {} : { [k]: flags[k] })
  return {
    ...pick('task'),
    ...pick('every'),
    ...pick('cron'),
    ...pick('solar'),
    ...pick('relative'),
    ...pick('args'),
    ...pick('kwargs'),
    ...pick('queue'),
    ...pick('priority'),
    ...pick('expires'),
  } as EntryFlags
}

async function ask(name: string | undefined): Promise<{ name: string; flags: EntryFlags }> {
  const { input } = await import('@inquirer/prompts')
  const entry = name ?? (await input({ message: 'Entry name', required: true }))
  const task = await input({ message: 'Task name', required: true })
  const when = await input({ message: "Every SECONDS, a crontab 'm h dom mon dow', or solar EVENT:LAT,LON", required: true })
  const args = await input({ message: 'Args (JSON array)', default: '[]' })
  const kwargs = await input({ message: 'Kwargs (JSON object)', default: '{}' })
  const queue = await input({ message: 'Queue', default: 'celery' })
  const flags: EntryFlags = { task, args, kwargs, queue }
  if (/^\s*\d+(\.\d+)?\s*$/.test(when)) flags.every = when.trim()
  else if (/^\s*[a-z_]+\s*:/.test(when)) flags.solar = when
  else flags.cron = when
  return { name: entry, flags }
}

export default class ScheduleAdd extends TsqCommand<EntryRow> {
  static summary = 'Add a periodic entry; running beats pick it up without a restart.'
  static args = { name: Args.string({ description: 'Entry name.' }) }
  static flags = { ...storeFlags, ...entryFlags }
  static examples = [
    "<%= config.bin %> schedule add cleanup --task proj.cleanup --cron '0 4 * * *'",
    '<%= config.bin %> schedule add ping --task proj.add --every 10 --args "[2, 2]" --scheduler redis',
    '<%= config.bin %> schedule add lights --task home.lights_on --solar sunset:51.5,-0.12',
    '<%= config.bin %> schedule add   # asks for the fields on a terminal',
  ]

  async run(): Promise<EntryRow> {
    const { args, flags } = await this.parse(ScheduleAdd)
    let name = args.name
    let fields = entryFlagsOf(flags)
    if (!fields.task && !fields.every && !fields.cron && !fields.solar) {
      if (!process.stdin.isTTY)
        throw new UsageError('schedule add needs NAME --task TASK and --every, --cron or --solar (no terminal to ask on)')
      const answered = await ask(name)
      name = answered.name
      fields = answered.flags
    }
    if (!name) throw new UsageError('schedule add needs an entry NAME')
    const definition = definitionFromFlags(name, fields)
    const store = await storeFromFlags(flags)
    try {
      if (await store.get(name))
        throw new UsageError(`entry ${JSON.stringify(name)} exists; change it with \`tsq schedule set ${name} ...\``)
      await store.save(definition)
      const row = rowOf((await store.get(name))!, zoneOf(flags))
      if (!this.jsonEnabled() && !flags.quiet) this.log(`added ${name}: ${row.task} ${row.schedule}`)
      return row
    } finally {
      await store.close()
    }
  }
}
