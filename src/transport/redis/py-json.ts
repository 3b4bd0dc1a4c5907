// Python `json.dumps` formatting (kombu 5.2.4 `kombu.utils.json.dumps`): separators
// `", "` and `": "`, ensure_ascii, insertion-ordered keys, floats as Python repr.
// Kept private to the Redis transport: the envelope must be byte-for-byte what a
// Python producer writes, so that both sides read each other's keys and hashes.
import type { HeaderValue } from '../transport.js'

export type PyJson = HeaderValue | undefined

function escapeString(s: string): string {
  let out = '"'
  for (let i = 0; i < s.length; i += 1) {
    const c = s.charCodeAt(i)
    if (c === 0x22) out += '\\"'
    else if (c === 0x5c) out += '\\\\'
    else if (c >= 0x20 && c <= 0x7e) out += s[i]
    else if (c === 0x0a) out += '\\n'
    else if (c === 0x0d) out += '\\r'
    else if (c === 0x09) out += '\\t'
    else if (c === 0x08) out += '\\b'
    else if (c === 0x0c) out += '\\f'
    // UTF-16 code units are exactly what Python writes for astral characters (surrogate pairs).
    else out += `\\u${c.toString(16).padStart(4, '0')}`
  }
  return `${out}"`
}

/** Python's `repr(float)`: shortest round-trip digits, scientific outside 1e-4 <= |x| < 1e16. */
export function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return 'NaN'
  if (x === Infinity) return 'Infinity'
  if (x === -Infinity) return '-Infinity'
  const [mantissa, expText] = x.toExponential().split('e') as [string, string]
  const negative = mantissa.startsWith('-')
  const digits = mantissa.replace('-', '').replace('.', '')
  const exp = Number(expText)
  const sign = negative ? '-' : ''
  if (exp >= -4 && exp < 16) {
    if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`
    const intPart = digits.slice(0, exp + 1).padEnd(exp + 1, '0')
    const frac = digits.slice(exp + 1)
    return `${sign}${intPart}.${frac === '' ? '0' : frac}`
  }
  const rest = digits.slice(1)
  const e = Math.abs(exp).toString().padStart(2, '0')
  return `${sign}${digits[0]}${rest ? `.${rest}` : ''}e${exp < 0 ? '-' : '+'}${e}`
}

function formatNumber(n: number): string {
  // JS cannot tell 2 from 2.0: safe integers are written as Python ints; past 2**53
  // an integral value most likely came from a float, so it keeps float form.
  if (Number.isSafeInteger(n)) return String(n === 0 ? 0 : n)
  return pyFloatRepr(n)
}

export function pyDumps(value: PyJson): string {
  if (value === null || value === undefined) return 'null'
  if (typeof value === 'string') return escapeString(value)
  if (typeof value === 'number') return formatNumber(value)
  if (typeof value === 'boolean') return value ? 'true' : 'false'
  if (Array.isArray(value)) return `[${value.map((v) => pyDumps(v)).join(', ')}]`
  const parts: string[] = []
  for (const [k, v] of Object.entries(value)) {
    if (v === undefined) continue
    parts.push(`${escapeString(k)}: ${pyDumps(v)}`)
  }
  return `{${parts.join(', ')}}`
}

const NON_FINITE: Record<string, number> = { NaN: Number.NaN, Infinity: Infinity, '-Infinity': -Infinity }
const SENTINEL = '\u0000tsq-nonfinite:'

/** `JSON.parse`, plus Python's bare `NaN`/`Infinity` tokens, which json.dumps emits by default. */
export function pyLoads(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch (error) {
    if (!/NaN|Infinity/.test(text)) throw error
  }
  let out = ''
  let inString = false
  for (let i = 0; i < text.length; i += 1) {
    const ch = text[i]!
    if (inString) {
      out += ch
      if (ch === '\\') {
        out += text[i + 1] ?? ''
        i += 1
      } else if (ch === '"') inString = false
      continue
    }
    if (ch === '"') {
      inString = true
      out += ch
      continue
    }
    const token = ['-Infinity', 'Infinity', 'NaN'].find((t) => text.startsWith(t, i))
    if (token) {
      out += JSON.stringify(SENTINEL + token)
      i += token.length - 1
    } else out += ch
  }
  return JSON.parse(out, (_key, v: unknown) =>
    typeof v === 'string' && v.startsWith(SENTINEL) ? NON_FINITE[v.slice(SENTINEL.length)] : v,
  )
}
