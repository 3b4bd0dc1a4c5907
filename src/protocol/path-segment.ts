// The one rule for every name that becomes a file or folder name in a file://
// store (queues, task, group and chord ids, lock ids): any string maps,
// reversibly, to a single path segment that stays inside its folder.
// Never `.`, `..` or empty, never a separator or NUL; `%` always escaped.
import { codedError } from './errors.js'

/** What the broker keeps readable: node names (`w1@host`), Celery queues, uuids. */
const BROKER_KEEP = /^[A-Za-z0-9_@.-]$/
/** What encodeURIComponent leaves as is: the result and lock stores' names stay as older versions wrote them. */
const URI_KEEP = /^[A-Za-z0-9_.!~*'()-]$/

export type SegmentAlphabet = 'broker' | 'uri'

/** Longest escaped segment: leaves room for suffixes within a 255-byte file name. */
export const MAX_SEGMENT = 200

export class PathNameError extends codedError('NAME_TOO_LONG') {}

/**
 * Percent-escapes every character outside the alphabet (UTF-8 bytes as `%XX`,
 * a lone surrogate as `%uXXXX`), then a leading dot: the result is never `.`,
 * `..`, hidden, empty (`%` stands for ''), and never holds `/`, `\` or NUL.
 */
export function escapeSegment(name: string, alphabet: SegmentAlphabet = 'broker'): string {
  if (name === '') return '%'
  const keep = alphabet === 'broker' ? BROKER_KEEP : URI_KEEP
  let out = ''
  for (const ch of name) {
    if (keep.test(ch)) {
      out += ch
      continue
    }
    const code = ch.codePointAt(0)!
    if (ch.length === 1 && code >= 0xd800 && code <= 0xdfff) {
      out += `%u${code.toString(16).toUpperCase().padStart(4, '0')}`
      continue
    }
    for (const byte of Buffer.from(ch, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  if (out.startsWith('.')) out = `%2E${out.slice(1)}`
  if (out.length > MAX_SEGMENT)
    throw new PathNameError(
      `name too long for a file:// store (${out.length} characters escaped, at most ${MAX_SEGMENT}): ${JSON.stringify(name.slice(0, 60))}…`,
    )
  return out
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** The inverse of escapeSegment; throws on text it cannot have produced. */
export function unescapeSegment(segment: string): string {
  if (segment === '%') return ''
  let out = ''
  let bytes: number[] = []
  const flush = () => {
    if (bytes.length === 0) return
    out += utf8.decode(Uint8Array.from(bytes))
    bytes = []
  }
  for (let i = 0; i < segment.length;) {
    if (segment[i] !== '%') {
      flush()
      out += segment[i]
      i += 1
      continue
    }
    if (segment[i + 1] === 'u') {
      const hex = segment.slice(i + 2, i + 6)
      if (!/^[0-9A-Fa-f]{4}$/.test(hex)) throw new PathNameError(`not an escaped name: ${JSON.stringify(segment.slice(0, 60))}`)
      flush()
      out += String.fromCharCode(Number.parseInt(hex, 16))
      i += 6
      continue
    }
    const hex = segment.slice(i + 1, i + 3)
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) throw new PathNameError(`not an escaped name: ${JSON.stringify(segment.slice(0, 60))}`)
    bytes.push(Number.parseInt(hex, 16))
    i += 3
  }
  flush()
  return out
}

/** True when `segment`, joined to a folder, names an entry directly inside it. */
export function isContainedSegment(segment: string): boolean {
  return segment !== '' && segment !== '.' && segment !== '..' && !/[/\\\0]/.test(segment)
}
