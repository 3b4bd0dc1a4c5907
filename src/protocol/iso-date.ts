// Dates on the wire: Celery writes eta/expires with `datetime.isoformat()`
// (`+00:00`, microseconds only when non-zero) and reads them with its own
// iso8601 regex, which is anchored at the start only and treats naive as UTC.

import { isoformatUtc } from './codecs/kombu-json.js'

/** The eta/expires header form: `2026-11-22T05:24:28.153844+00:00`. */
export function formatIsoDate(d: Date): string {
  return isoformatUtc(d, '+00:00')
}

// celery/utils/iso8601.py ISO8601_REGEX, month and day made mandatory because
// Python fails on their absence anyway (datetime(year, None) is a TypeError).
const ISO8601 = /^(\d{4})-(\d{1,2})-(\d{1,2})(?:.(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[-+]\d{2}:\d{2})?)?/

/**
 * Parse an eta/expires string as Celery does (naive means UTC). Throws
 * RangeError with a one-line reason when Python would raise ValueError.
 */
export function parseIsoDate(s: string): Date {
  const m = ISO8601.exec(s)
  if (!m) throw new RangeError(`unable to parse date string ${JSON.stringify(s)}`)
  const [, y, mo, d, h, mi, sec, frac, tz] = m
  const num = (x: string | undefined): number => (x === undefined ? 0 : Number(x))
  const parts = [num(y), num(mo), num(d), num(h), num(mi), num(sec)] as const
  const ms = frac === undefined ? 0 : Number(frac.padEnd(3, '0').slice(0, 3))
  // setUTCFullYear, unlike Date.UTC, keeps years 0-99 literal as Python does.
  const check = new Date(0)
  check.setUTCFullYear(parts[0], parts[1] - 1, parts[2])
  check.setUTCHours(parts[3], parts[4], parts[5], ms)
  // Out-of-range fields roll over in JS (2024-02-30 → March 1); Python refuses them.
  if (
    parts[0] < 1 ||
    check.getUTCFullYear() !== parts[0] ||
    check.getUTCMonth() !== parts[1] - 1 ||
    check.getUTCDate() !== parts[2] ||
    parts[3] > 23 ||
    parts[4] > 59 ||
    parts[5] > 59
  ) {
    throw new RangeError(`date out of range in ${JSON.stringify(s)}`)
  }
  if (tz && tz !== 'Z') {
    const sign = tz[0] === '-' ? -1 : 1
    const offsetMin = sign * (Number(tz.slice(1, 3)) * 60 + Number(tz.slice(4, 6)))
    check.setTime(check.getTime() - offsetMin * 60_000)
  }
  return check
}
