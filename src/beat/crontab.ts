// Celery's crontab (spec §8.4), written here rather than taken from cron-parser
// or croner: both follow Vixie cron (day-of-month OR day-of-week), neither
// parses Celery's wrap-around ranges (`fri-mon`) or weekday names in any field
// the way celery's crontab_parser does, and we need our own DST rule: a time in
// a spring-forward gap runs once at the first valid instant, and a repeated
// fall-back hour runs each cron time once.
import { resolveWall, wallOf, type WallTime } from './timezone.js'
import { codedError } from '../protocol/index.js'

export interface CrontabSpec {
  minute: string
  hour: string
  day_of_week: string
  day_of_month: string
  month_of_year: string
}

export class CrontabParseError extends codedError('USAGE') {}

const WEEKDAYS: Record<string, number> = { sun: 0, mon: 1, tue: 2, wed: 3, thu: 4, fri: 5, sat: 6 }

/** celery.schedules.crontab_parser: values in [min, min + max). */
function parseField(spec: string, max: number, min: number, field: string): number[] {
  const fail = (why: string) => new CrontabParseError(`invalid crontab ${field} ${JSON.stringify(spec)}: ${why}`)
  const num = (s: string): number => {
    if (s.startsWith('-')) throw fail('negative numbers not supported')
    if (/^\d+$/.test(s)) return Number(s)
    const day = WEEKDAYS[s.slice(0, 3).toLowerCase()]
    if (day === undefined || s.length < 3) throw fail(`invalid weekday literal ${JSON.stringify(s)}`)
    return day
  }
  const range = (from: string, to?: string): number[] => {
    const fr = num(from)
    if (to === undefined) return [fr]
    const t = num(to)
    const out: number[] = []
    if (t < fr) {
      for (let i = fr; i < min + max; i++) out.push(i)
      for (let i = min; i <= t; i++) out.push(i)
    } else for (let i = fr; i <= t; i++) out.push(i)
    return out
  }
  const stepped = (values: number[], step: string | undefined): number[] => {
    if (!step || !/^\d+$/.test(step) || Number(step) === 0) throw fail('empty or bad step')
    return values.filter((_, i) => i % Number(step) === 0)
  }
  const star = () => Array.from({ length: max }, (_, i) => i + min)
  const acc = new Set<number>()
  for (const part of spec.split(',')) {
    if (!part) throw fail('empty part')
    let m: RegExpExecArray | null
    let values: number[]
    if ((m = /^(\w+?)-(\w+)\/(\w+)?$/.exec(part))) values = stepped(range(m[1]!, m[2]!), m[3])
    else if ((m = /^(\w+?)-(\w+)$/.exec(part))) values = range(m[1]!, m[2]!)
    else if ((m = /^\*\/(\w+)?$/.exec(part))) values = stepped(star(), m[1])
    else if (part === '*') values = star()
    else if (/^\w+$/.test(part) || part.startsWith('-')) values = range(part)
    else throw fail(`cannot parse ${JSON.stringify(part)}`)
    for (const v of values) {
      if (v < min || v >= min + max) throw fail(`${v} is out of range ${min}-${min + max - 1}`)
      acc.add(v)
    }
  }
  return [...acc].sort((a, b) => a - b)
}

const YEARS_AHEAD = 8

export class Crontab {
  readonly minutes: number[]
  readonly hours: number[]
  readonly daysOfWeek: Set<number>
  readonly daysOfMonth: Set<number>
  readonly months: Set<number>

  constructor(
    readonly spec: CrontabSpec,
    readonly tz = 'UTC',
  ) {
    this.minutes = parseField(spec.minute, 60, 0, 'minute')
    this.hours = parseField(spec.hour, 24, 0, 'hour')
    this.daysOfWeek = new Set(parseField(spec.day_of_week, 7, 0, 'day_of_week'))
    this.daysOfMonth = new Set(parseField(spec.day_of_month, 31, 1, 'day_of_month'))
    this.months = new Set(parseField(spec.month_of_year, 12, 1, 'month_of_year'))
  }

  /** `m h dom mon dow`, the order `--cron` takes (crontab(5) order). */
  static fromExpression(expr: string, tz = 'UTC'): Crontab {
    const f = expr.trim().split(/\s+/)
    if (f.length !== 5) throw new CrontabParseError(`--cron needs 5 fields 'm h dom mon dow', got ${JSON.stringify(expr)}`)
    return new Crontab({ minute: f[0]!, hour: f[1]!, day_of_month: f[2]!, month_of_year: f[3]!, day_of_week: f[4]! }, tz)
  }

  toString(): string {
    const s = this.spec
    return `<crontab: ${s.minute} ${s.hour} ${s.day_of_week} ${s.day_of_month} ${s.month_of_year} (m/h/dM/MY/d)>`
  }

  /** The first matching wall minute strictly after `after` (seconds ignored). */
  private *wallCandidates(after: WallTime): Generator<WallTime> {
    const startDay = Date.UTC(after.year, after.month - 1, after.day)
    for (let d = 0; d < 366 * YEARS_AHEAD; d++) {
      const date = new Date(startDay + d * 86_400_000)
      const month = date.getUTCMonth() + 1
      // Day of week AND day of month must both match (Celery, not Vixie cron).
      if (!this.months.has(month) || !this.daysOfMonth.has(date.getUTCDate()) || !this.daysOfWeek.has(date.getUTCDay())) continue
      for (const hour of this.hours) {
        if (d === 0 && hour < after.hour) continue
        for (const minute of this.minutes) {
          if (d === 0 && hour === after.hour && minute <= after.minute) continue
          yield { year: date.getUTCFullYear(), month, day: date.getUTCDate(), hour, minute, second: 0 }
        }
      }
    }
  }

  /** The next run instant (epoch ms) strictly after the instant `lastRunAt`. */
  nextAfter(lastRunAt: number): number {
    for (const w of this.wallCandidates(wallOf(this.tz, lastRunAt))) {
      const r = resolveWall(this.tz, w)
      if (r.kind === 'gap') {
        if (r.firstValid > lastRunAt) return r.firstValid
        continue
      }
      // In a repeated hour take the first showing not yet past: each cron time runs once.
      const t = r.instants.find((i) => i > lastRunAt)
      if (t !== undefined) return t
    }
    throw new CrontabParseError(`${this.toString()} never matches a date within ${YEARS_AHEAD} years`)
  }

  /** Celery's is_due: due when the next time after the last run has come. Seconds. */
  isDue(lastRunAt: number, now: number): { due: boolean; next: number } {
    const rem = (this.nextAfter(lastRunAt) - now) / 1000
    if (rem <= 0) return { due: true, next: (this.nextAfter(now) - now) / 1000 }
    return { due: false, next: rem }
  }

  /** The due instant after `lastRunAt`, for store indexes (RedBeat's zset score). */
  dueAt(lastRunAt: number): number {
    return this.nextAfter(lastRunAt)
  }
}
