// Wall-clock arithmetic in an IANA zone with Intl only (no tz database copy).
// Cron fields name wall-clock times; these helpers map them to instants and
// say when a wall time falls in a DST gap or is repeated in a fall-back hour.

export interface WallTime {
  year: number
  month: number // 1-12
  day: number
  hour: number
  minute: number
  second: number
}

const formatters = new Map<string, Intl.DateTimeFormat>()

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    })
    formatters.set(tz, f)
  }
  return f
}

/** Throws RangeError for a zone Intl does not know. */
export function assertTimezone(tz: string): void {
  try {
    formatter(tz)
  } catch {
    throw new RangeError(`unknown timezone ${JSON.stringify(tz)} (use an IANA name such as UTC or Europe/Berlin)`)
  }
}

export function wallOf(tz: string, epochMs: number): WallTime {
  const parts = formatter(tz).formatToParts(new Date(epochMs))
  const get = (type: Intl.DateTimeFormatPartTypes) => Number(parts.find((p) => p.type === type)!.value)
  return { year: get('year'), month: get('month'), day: get('day'), hour: get('hour'), minute: get('minute'), second: get('second') }
}

/** The wall time read as if it were UTC, in ms: handy for day arithmetic. */
export function wallMs(w: WallTime): number {
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second)
}

/** UTC offset in minutes at an instant (Berlin summer: 120). */
export function offsetAt(tz: string, epochMs: number): number {
  const floored = Math.floor(epochMs / 1000) * 1000
  return Math.round((wallMs(wallOf(tz, floored)) - floored) / 60_000)
}

export type Resolved = { kind: 'ok'; instants: number[] } | { kind: 'gap'; firstValid: number }

/**
 * The instants that show this wall time: one normally, two in a fall-back
 * hour (earliest first), none in a spring-forward gap, where `firstValid` is
 * the instant the gap ends (the first wall time that exists after it).
 * Assumes at most one transition within a day either side, as every zone has.
 */
export function resolveWall(tz: string, w: WallTime): Resolved {
  const local = wallMs(w)
  const offsets = new Set([offsetAt(tz, local - 86_400_000), offsetAt(tz, local), offsetAt(tz, local + 86_400_000)])
  const instants: number[] = []
  for (const o of offsets) {
    const t = local - o * 60_000
    if (offsetAt(tz, t) === o) instants.push(t)
  }
  if (instants.length > 0) return { kind: 'ok', instants: [...new Set(instants)].sort((a, b) => a - b) }
  // A gap: the transition lies between the two candidate instants; find it to the second.
  const sorted = [...offsets].sort((a, b) => a - b)
  let lo = local - sorted[sorted.length - 1]! * 60_000
  let hi = local - sorted[0]! * 60_000
  const before = offsetAt(tz, lo)
  while (hi - lo > 1000) {
    const mid = Math.floor((lo + hi) / 2000) * 1000
    if (offsetAt(tz, mid) === before) lo = mid
    else hi = mid
  }
  return { kind: 'gap', firstValid: hi }
}
