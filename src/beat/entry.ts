// A periodic entry and its stored form. The JSON is RedBeat's (spec §8.6) in
// both stores, so an entry RedBeat wrote is read here and one written here is
// valid RedBeat JSON.
import { checkJsonText, codedError } from '../protocol/index.js'
import { Clocked } from './clocked.js'
import { Crontab, type CrontabSpec } from './crontab.js'
import { Interval } from './interval.js'
import { Solar } from './solar.js'
import { resolveWall } from './timezone.js'

export type Schedule = Interval | Crontab | Clocked | Solar

export type ScheduleJson =
  | { __type__: 'interval'; every: number; relative: boolean }
  /** `timezone`: the zone the fields are read in when not beat's (django-celery-beat's crontab rows carry one). */
  | ({ __type__: 'crontab'; timezone?: string } & CrontabSpec)
  /** django-celery-beat's clocked schedule: once, at an ISO instant. */
  | { __type__: 'clocked'; clocked_time: string }
  /** Celery's solar schedule (django-celery-beat's solar rows): the next sun event at a place. */
  | { __type__: 'solar'; event: string; lat: number; lon: number }

/** apply_async options beat passes on (spec §8.1). */
export interface EntryOptions {
  queue?: string
  exchange?: string
  routing_key?: string
  priority?: number
  /** Seconds after sending, or an ISO date. */
  expires?: number | string
  headers?: Record<string, unknown>
  [key: string]: unknown
}

export interface EntryDefinition {
  name: string
  task: string
  args: unknown[]
  kwargs: Record<string, unknown>
  options: EntryOptions
  schedule: ScheduleJson
  enabled: boolean
}

export interface EntryMeta {
  /** Epoch ms; null means never run (RedBeat: year 1, always due). */
  lastRunAt: number | null
  totalRunCount: number
}

export interface Entry {
  definition: EntryDefinition
  meta: EntryMeta
}

export class EntryError extends codedError('USAGE') {}

export function scheduleOf(json: ScheduleJson, tz: string): Schedule {
  if (json.__type__ === 'interval') return new Interval(Number(json.every), Boolean(json.relative), tz)
  if (json.__type__ === 'crontab') return new Crontab(json, json.timezone || tz)
  if (json.__type__ === 'clocked') return new Clocked(Date.parse(json.clocked_time))
  if (json.__type__ === 'solar') return new Solar(json.event, Number(json.lat), Number(json.lon))
  throw new EntryError(
    `unsupported schedule type ${JSON.stringify((json as { __type__?: unknown }).__type__)} (tsq runs interval, crontab, solar and clocked)`,
  )
}

/** When an entry is next due: at once if it never ran, else its schedule's next time after its last run. */
export function dueAtOf(entry: Entry, tz: string, now: number): number {
  if (entry.meta.lastRunAt === null) return now
  return scheduleOf(entry.definition.schedule, tz).dueAt(entry.meta.lastRunAt)
}

export function describeSchedule(json: ScheduleJson): string {
  if (json.__type__ === 'interval') return `every ${json.every}s${json.relative ? ' (relative)' : ''}`
  if (json.__type__ === 'clocked') return `at ${json.clocked_time}`
  if (json.__type__ === 'solar') return `solar ${json.event} at ${json.lat},${json.lon}`
  return `cron ${json.minute} ${json.hour} ${json.day_of_month} ${json.month_of_year} ${json.day_of_week}${json.timezone ? ` ${json.timezone}` : ''}`
}

export function intervalJson(every: number, relative = false): ScheduleJson {
  return { __type__: 'interval', every: Number(every), relative }
}

export function crontabJson(expr: string): ScheduleJson {
  const { minute, hour, day_of_week, day_of_month, month_of_year } = Crontab.fromExpression(expr).spec
  // RedBeat's field order.
  return { __type__: 'crontab', minute, hour, day_of_week, day_of_month, month_of_year }
}

/** `EVENT:LAT,LON` (e.g. `sunrise:51.5,-0.12`) as RedBeat's solar JSON. */
export function solarJson(spec: string): ScheduleJson {
  const m = /^\s*([a-z_]+)\s*:\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*$/.exec(spec)
  if (!m) throw new EntryError(`solar schedule must be EVENT:LAT,LON (e.g. sunrise:51.5,-0.12), got ${JSON.stringify(spec)}`)
  const json: ScheduleJson = { __type__: 'solar', event: m[1]!, lat: Number(m[2]), lon: Number(m[3]) }
  try {
    scheduleOf(json, 'UTC')
  } catch (error) {
    throw new EntryError((error as Error).message)
  }
  return json
}

// RedBeat's datetime: wall fields plus a zone name, or a UTC offset in seconds.
interface DatetimeJson {
  __type__: 'datetime'
  year: number
  month: number
  day: number
  hour: number
  minute: number
  second: number
  microsecond: number
  timezone: string | number | null
}

export function encodeDatetime(ms: number): DatetimeJson {
  const d = new Date(ms)
  return {
    __type__: 'datetime',
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
    second: d.getUTCSeconds(),
    microsecond: d.getUTCMilliseconds() * 1000,
    timezone: 0.0,
  }
}

export function decodeDatetime(v: unknown): number | null {
  if (!v || typeof v !== 'object' || (v as DatetimeJson).__type__ !== 'datetime') return null
  const d = v as DatetimeJson
  const wall = { year: d.year, month: d.month, day: d.day, hour: d.hour, minute: d.minute, second: d.second }
  // A stored time that is not one (fields not numbers, an unknown zone) reads as "never ran", not as a RangeError.
  if (!Object.values(wall).every((x) => typeof x === 'number' && Number.isFinite(x))) return null
  const frac = typeof d.microsecond === 'number' && Number.isFinite(d.microsecond) ? Math.floor(d.microsecond / 1000) : 0
  let ms: number
  if (typeof d.timezone === 'number') ms = Date.UTC(d.year, d.month - 1, d.day, d.hour, d.minute, d.second) + frac - d.timezone * 1000
  else {
    const tz = typeof d.timezone === 'string' && d.timezone ? d.timezone : 'UTC'
    try {
      const r = resolveWall(tz, wall)
      ms = (r.kind === 'gap' ? r.firstValid : r.instants[0]!) + frac
    } catch {
      return null
    }
  }
  return Number.isFinite(ms) ? ms : null
}

export function encodeDefinition(d: EntryDefinition): string {
  // Key order as RedBeat writes it.
  return JSON.stringify({
    name: d.name,
    task: d.task,
    args: d.args,
    kwargs: d.kwargs,
    options: d.options,
    schedule: d.schedule,
    enabled: d.enabled,
  })
}

/** Characters a stored entry's definition or meta may hold (read from Redis, a file or a database). */
export const MAX_ENTRY_CHARS = 1024 * 1024

/** A stored entry's JSON, its size and nesting checked first; anything unreadable is an EntryError. */
function parseEntryJson(raw: string, what: string): Record<string, unknown> {
  let v: unknown
  try {
    checkJsonText(raw, what, MAX_ENTRY_CHARS)
    v = JSON.parse(raw)
  } catch (error) {
    throw new EntryError(`malformed ${what}: ${(error as Error).message}`)
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new EntryError(`malformed ${what}: not a JSON object`)
  return v as Record<string, unknown>
}

export function decodeDefinition(raw: string): EntryDefinition {
  const d = parseEntryJson(raw, 'entry definition') as Partial<EntryDefinition>
  if (typeof d.name !== 'string' || typeof d.task !== 'string' || !d.schedule)
    throw new EntryError(`malformed entry definition: ${raw.slice(0, 120)}`)
  return {
    name: d.name,
    task: d.task,
    args: Array.isArray(d.args) ? d.args : [],
    kwargs: d.kwargs && typeof d.kwargs === 'object' ? d.kwargs : {},
    options: d.options && typeof d.options === 'object' ? d.options : {},
    schedule: d.schedule,
    enabled: d.enabled !== false,
  }
}

export function encodeMeta(m: EntryMeta): string {
  return JSON.stringify({ last_run_at: m.lastRunAt === null ? null : encodeDatetime(m.lastRunAt), total_run_count: m.totalRunCount })
}

export function decodeMeta(raw: string | null | undefined): EntryMeta {
  if (!raw) return { lastRunAt: null, totalRunCount: 0 }
  const m = parseEntryJson(raw, 'entry meta') as { last_run_at?: unknown; total_run_count?: unknown }
  return { lastRunAt: decodeDatetime(m.last_run_at), totalRunCount: typeof m.total_run_count === 'number' ? m.total_run_count : 0 }
}

/**
 * An app's `beatSchedule` entry, in Celery's config shape:
 * `{task, schedule: seconds | {every, relative} | {cron: 'm h dom mon dow'} | {solar: 'EVENT:LAT,LON'} | crontab fields, args, kwargs, options, relative}`.
 */
export function definitionFromConfig(name: string, raw: unknown): EntryDefinition {
  if (!raw || typeof raw !== 'object') throw new EntryError(`beatSchedule.${name}: expected an object`)
  const r = raw as Record<string, unknown>
  if (typeof r.task !== 'string') throw new EntryError(`beatSchedule.${name}: task must be a string`)
  const s = r.schedule
  let schedule: ScheduleJson
  if (typeof s === 'number') schedule = intervalJson(s, r.relative === true)
  else if (typeof s === 'string') schedule = crontabJson(s)
  else if (s && typeof s === 'object') {
    const o = s as Record<string, unknown>
    if (typeof o.every === 'number') schedule = intervalJson(o.every, o.relative === true || r.relative === true)
    else if (typeof o.cron === 'string') schedule = crontabJson(o.cron)
    else if (typeof o.solar === 'string') schedule = solarJson(o.solar)
    else if (o.__type__ === 'interval' || o.__type__ === 'crontab' || o.__type__ === 'solar') schedule = o as unknown as ScheduleJson
    else {
      const f = (k: string) => (o[k] === undefined ? '*' : String(o[k]))
      schedule = {
        __type__: 'crontab',
        minute: f('minute'),
        hour: f('hour'),
        day_of_week: f('day_of_week'),
        day_of_month: f('day_of_month'),
        month_of_year: f('month_of_year'),
      }
    }
  } else throw new EntryError(`beatSchedule.${name}: schedule must be seconds, {every}, {cron}, {solar} or crontab fields`)
  scheduleOf(schedule, 'UTC')
  return {
    name,
    task: r.task,
    args: Array.isArray(r.args) ? r.args : [],
    kwargs: r.kwargs && typeof r.kwargs === 'object' ? (r.kwargs as Record<string, unknown>) : {},
    options: r.options && typeof r.options === 'object' ? (r.options as EntryOptions) : {},
    schedule,
    enabled: r.enabled !== false,
  }
}

/** Celery compares entries on task, args, kwargs, options and schedule. */
export function sameDefinition(a: EntryDefinition, b: EntryDefinition): boolean {
  return (
    encodeDefinition({ ...a, name: '', enabled: true }) === encodeDefinition({ ...b, name: '', enabled: true }) && a.enabled === b.enabled
  )
}
