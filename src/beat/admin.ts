// What `tsq schedule` does to a store: build definitions from flags, and the
// rows `ls`/`show` print. The commands stay thin around these.
import {
  crontabJson,
  describeSchedule,
  dueAtOf,
  EntryError,
  intervalJson,
  scheduleOf,
  solarJson,
  type Entry,
  type EntryDefinition,
  type EntryOptions,
} from './entry.js'

export interface EntryFlags {
  task?: string
  every?: string
  cron?: string
  /** `EVENT:LAT,LON`, Celery's solar schedule. */
  solar?: string
  relative?: boolean
  args?: string
  kwargs?: string
  queue?: string
  priority?: number
  expires?: string
}

function parseJson<T>(flag: string, raw: string, check: (v: unknown) => v is T, want: string): T {
  let v: unknown
  try {
    v = JSON.parse(raw)
  } catch {
    throw new EntryError(`--${flag} must be JSON ${want}, got ${JSON.stringify(raw)}`)
  }
  if (!check(v)) throw new EntryError(`--${flag} must be JSON ${want}, got ${JSON.stringify(raw)}`)
  return v
}

const isArray = (v: unknown): v is unknown[] => Array.isArray(v)
const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v)

/** A new definition (`add`), or `base` with the given flags changed (`set`). */
export function definitionFromFlags(name: string, f: EntryFlags, base?: EntryDefinition): EntryDefinition {
  if ([f.every, f.cron, f.solar].filter((v) => v !== undefined).length > 1) throw new EntryError('give one of --every, --cron or --solar')
  const task = f.task ?? base?.task
  if (!task) throw new EntryError('--task is required')
  let schedule = base?.schedule
  if (f.every !== undefined) {
    const n = Number(f.every)
    if (!Number.isFinite(n) || n <= 0) throw new EntryError(`--every must be a positive number of seconds, got ${JSON.stringify(f.every)}`)
    schedule = intervalJson(n, f.relative ?? false)
  } else if (f.cron !== undefined) schedule = crontabJson(f.cron)
  else if (f.solar !== undefined) schedule = solarJson(f.solar)
  else if (f.relative !== undefined && schedule?.__type__ === 'interval') schedule = { ...schedule, relative: f.relative }
  if (!schedule) throw new EntryError("--every SECONDS, --cron 'm h dom mon dow' or --solar EVENT:LAT,LON is required")
  scheduleOf(schedule, 'UTC')
  const options: EntryOptions = { ...(base?.options ?? {}) }
  if (f.queue !== undefined) options.queue = f.queue
  if (f.priority !== undefined) options.priority = f.priority
  if (f.expires !== undefined) {
    const n = Number(f.expires)
    if (!Number.isFinite(n) || n <= 0) throw new EntryError(`--expires must be seconds, got ${JSON.stringify(f.expires)}`)
    options.expires = n
  }
  return {
    name,
    task,
    args: f.args !== undefined ? parseJson('args', f.args, isArray, 'array') : (base?.args ?? []),
    kwargs: f.kwargs !== undefined ? parseJson('kwargs', f.kwargs, isObject, 'object') : (base?.kwargs ?? {}),
    options,
    schedule,
    enabled: base?.enabled ?? true,
  }
}

export interface EntryRow {
  name: string
  task: string
  schedule: string
  enabled: boolean
  args: unknown[]
  kwargs: Record<string, unknown>
  options: EntryOptions
  last_run_at: string | null
  total_run_count: number
  next_run_at: string | null
}

export function rowOf(e: Entry, tz: string, now = Date.now()): EntryRow {
  const d = e.definition
  let next: string | null = null
  if (d.enabled) {
    try {
      next = new Date(dueAtOf(e, tz, now)).toISOString()
    } catch {
      next = null
    }
  }
  return {
    name: d.name,
    task: d.task,
    schedule: describeSchedule(d.schedule),
    enabled: d.enabled,
    args: d.args,
    kwargs: d.kwargs,
    options: d.options,
    last_run_at: e.meta.lastRunAt === null ? null : new Date(e.meta.lastRunAt).toISOString(),
    total_run_count: e.meta.totalRunCount,
    next_run_at: next,
  }
}
