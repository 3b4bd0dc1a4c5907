// kombu 5.2.4's JSON (spec §1.5): Python's json.dumps with its default
// separators and ensure_ascii, kombu's datetime rule (isoformat, `+00:00`
// becomes `Z`), floats in Python repr and bare NaN/Infinity tokens. Peers
// compare some of these bytes (the Redis envelope, reply bodies), so the
// layout matters, not just the values.

import { EncodeError } from '../errors.js'
import { DEFAULT_MAX_DEPTH } from './limits.js'
import { PyFloat, PyTuple, formatPyFloat, formatPyNumber } from './py-types.js'

export { PyFloat } from './py-types.js'

// Everything Python escapes with ensure_ascii=True: quote, backslash, C0
// controls and every code unit outside printable ASCII.
// eslint-disable-next-line no-control-regex -- JSON escapes these control characters
const NEEDS_ESCAPE = /["\\\x00-\x1f\x7f-\uffff]/g
const SHORT_ESCAPES: Record<string, string> = {
  '"': '\\"',
  '\\': '\\\\',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\b': '\\b',
  '\f': '\\f',
}

// Most strings a message carries (ids, names, base64 bodies) need no escape:
// one test of the whole string skips the replace and its callback.
// eslint-disable-next-line no-control-regex -- JSON escapes these control characters
const HAS_ESCAPE = /["\\\x00-\x1f\x7f-\uffff]/

export function quoteJsonString(s: string): string {
  if (!HAS_ESCAPE.test(s)) return `"${s}"`
  return `"${s.replace(NEEDS_ESCAPE, (ch) => SHORT_ESCAPES[ch] ?? `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`)}"`
}

/** Python's `datetime.isoformat()` of an aware UTC datetime, microseconds only when non-zero. */
export function isoformatUtc(d: Date, suffix: '+00:00' | 'Z' | '' = '+00:00'): string {
  if (Number.isNaN(d.getTime())) throw new TypeError('Invalid Date is not JSON serializable')
  const year = d.getUTCFullYear()
  if (year < 1 || year > 9999) throw new TypeError(`year ${year} is out of Python's datetime range`)
  const p2 = (n: number): string => String(n).padStart(2, '0')
  const base = `${String(year).padStart(4, '0')}-${p2(d.getUTCMonth() + 1)}-${p2(d.getUTCDate())}T${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())}`
  const ms = d.getUTCMilliseconds()
  return `${base}${ms === 0 ? '' : `.${String(ms).padStart(3, '0')}000`}${suffix}`
}

function floatToken(x: number): string {
  if (Number.isNaN(x)) return 'NaN'
  if (x === Infinity) return 'Infinity'
  if (x === -Infinity) return '-Infinity'
  return formatPyFloat(x)
}

function numberToken(x: number): string {
  return Number.isFinite(x) ? formatPyNumber(x) : floatToken(x)
}

// Python's json turns non-string keys into strings this way.
function keyText(k: unknown): string {
  if (typeof k === 'string') return k
  if (k === null || k === undefined) return 'null'
  if (typeof k === 'boolean') return k ? 'true' : 'false'
  if (typeof k === 'number') return numberToken(k)
  if (k instanceof PyFloat) return floatToken(k.value)
  if (typeof k === 'bigint') return k.toString()
  throw new TypeError(`keys must be str, int, float, bool or None, not ${typeof k}`)
}

// Objects being written, outermost first. A cycle makes the walk go ever
// deeper, so the path is searched only past CYCLE_CHECK_DEPTH levels: ordinary
// messages (a few levels) pay no Set add/delete per object, and a cycle still
// ends in Python's "Circular reference detected".
const CYCLE_CHECK_DEPTH = 32

function enter(obj: object, path: object[]): void {
  if (path.length >= CYCLE_CHECK_DEPTH && path.includes(obj)) throw new TypeError('Circular reference detected')
  path.push(obj)
}

// The quoted `"key": ` of the keys messages repeat (a task's headers, an
// envelope's properties): a send writes the same seventeen header names each
// time, and their escape test and concatenation were a tenth of encoding one.
const KEY_PREFIXES = new Map<string, string>()
const KEY_PREFIX_CACHE_MAX = 512

function keyPrefix(k: string): string {
  let text = KEY_PREFIXES.get(k)
  if (text !== undefined) return text
  text = `${quoteJsonString(k)}: `
  // Bounded: keys of user data (a dict argument's) must not grow it for ever.
  if (KEY_PREFIXES.size < KEY_PREFIX_CACHE_MAX && k.length <= 64) KEY_PREFIXES.set(k, text)
  return text
}

function write(value: unknown, path: object[]): string {
  if (value === null || value === undefined) return 'null'
  switch (typeof value) {
    case 'string':
      return quoteJsonString(value)
    case 'boolean':
      return value ? 'true' : 'false'
    case 'number':
      return numberToken(value)
    case 'bigint':
      return value.toString()
    case 'object':
      break
    default:
      throw new TypeError(`Object of type ${typeof value} is not JSON serializable`)
  }
  if (Array.isArray(value)) return writeList(value, value, path)
  if (value instanceof PyFloat) return floatToken(value.value)
  if (value instanceof Date) return quoteJsonString(isoformatUtc(value, 'Z'))
  if (value instanceof Uint8Array || value instanceof ArrayBuffer) {
    // kombu 5.2.4 refuses bytes too; silently base64-ing would change meaning.
    throw new TypeError('Object of type bytes is not JSON serializable')
  }
  const obj = value as object
  if (obj instanceof PyTuple) return writeList(obj, obj.items, path)
  if (obj instanceof Set) return writeList(obj, [...obj], path)
  enter(obj, path)
  let out = '{'
  if (obj instanceof Map) {
    for (const [k, v] of obj) {
      if (v === undefined) continue
      out += `${out.length > 1 ? ', ' : ''}${quoteJsonString(keyText(k))}: ${write(v, path)}`
    }
  } else {
    const toJSON = (obj as { toJSON?: unknown }).toJSON
    if (typeof toJSON === 'function') {
      const text = write((toJSON as () => unknown).call(obj), path)
      path.pop()
      return text
    }
    const record = obj as Record<string, unknown>
    let first = true
    for (const k of Object.keys(record)) {
      const v = record[k]
      if (v === undefined) continue
      out += `${first ? '' : ', '}${keyPrefix(k)}${write(v, path)}`
      first = false
    }
  }
  // No finally: a throw ends the whole dumps, whose path goes with it.
  path.pop()
  return `${out}}`
}

function writeList(owner: object, items: readonly unknown[], path: object[]): string {
  enter(owner, path)
  let out = '['
  for (let i = 0; i < items.length; i++) out += i === 0 ? write(items[i], path) : `, ${write(items[i], path)}`
  path.pop()
  return `${out}]`
}

/**
 * `kombu.utils.json.dumps`: the exact text a Celery 5.2 peer would write for
 * the same value. What it cannot write throws EncodeError, as kombu's does.
 */
export function dumps(value: unknown): string {
  try {
    return write(value, [])
  } catch (error) {
    throw new EncodeError(error)
  }
}

export interface LoadsOptions {
  /**
   * 'pyfloat' keeps floats with integral values (`2.0`) as PyFloat, so they
   * re-encode and repr as Python would; default 'number' gives plain numbers.
   */
  floats?: 'number' | 'pyfloat'
  /**
   * 'exact' gives an integer a double cannot hold exactly as a BigInt, as
   * Python's int keeps it (a 64-bit id); default 'number' rounds it.
   */
  integers?: 'number' | 'exact'
}

/** Sixteen digits in a row: the shortest integer a double can round. Text without them has none. */
const LONG_DIGIT_RUN = /\d{16}/

/**
 * `json.loads` as Python does it: standard JSON plus the bare NaN, Infinity
 * and -Infinity tokens. Throws SyntaxError on invalid input.
 */
export function loads(text: string, options: LoadsOptions = {}): unknown {
  const exactIntegers = options.integers === 'exact' && LONG_DIGIT_RUN.test(text)
  if (options.floats !== 'pyfloat' && !exactIntegers) {
    try {
      return JSON.parse(text)
    } catch {
      // Fall through: the slow parser accepts Python's extra tokens and
      // gives a precise error otherwise.
    }
  }
  return new Parser(text, options.floats === 'pyfloat', exactIntegers).parseDocument()
}

const NUMBER_RE = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y

/** The slow parser recurses per level: past this it refuses, as Python's json.loads does past its recursion limit. */
const PARSER_MAX_DEPTH = DEFAULT_MAX_DEPTH

class Parser {
  private i = 0
  private depth = 0
  constructor(
    private readonly s: string,
    private readonly keepFloats: boolean,
    private readonly exactIntegers = false,
  ) {}

  parseDocument(): unknown {
    const v = this.value()
    this.ws()
    if (this.i < this.s.length) this.fail('Extra data')
    return v
  }

  private fail(what: string): never {
    throw new SyntaxError(`${what} at position ${this.i}`)
  }

  private ws(): void {
    const s = this.s
    while (this.i < s.length) {
      const c = s.charCodeAt(this.i)
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) this.i++
      else break
    }
  }

  private literal(word: string, v: unknown): unknown {
    if (this.s.startsWith(word, this.i)) {
      this.i += word.length
      return v
    }
    return this.fail('Expecting value')
  }

  private value(): unknown {
    this.ws()
    const c = this.s[this.i]
    switch (c) {
      case '{':
        return this.object()
      case '[':
        return this.array()
      case '"':
        return this.string()
      case 't':
        return this.literal('true', true)
      case 'f':
        return this.literal('false', false)
      case 'n':
        return this.literal('null', null)
      case 'N':
        return this.literal('NaN', NaN)
      case 'I':
        return this.literal('Infinity', Infinity)
      case '-':
        if (this.s.startsWith('-Infinity', this.i)) return this.literal('-Infinity', -Infinity)
        return this.number()
      default:
        if (c !== undefined && c >= '0' && c <= '9') return this.number()
        return this.fail('Expecting value')
    }
  }

  private number(): unknown {
    NUMBER_RE.lastIndex = this.i
    const m = NUMBER_RE.exec(this.s)
    if (!m) return this.fail('Expecting value')
    this.i += m[0].length
    const n = Number(m[0])
    const isFloat = m[1] !== undefined || m[2] !== undefined
    if (this.keepFloats && isFloat && Number.isInteger(n)) return new PyFloat(n)
    // Only where a double would change it: what a JS sender wrote from a number reads back as that number.
    if (this.exactIntegers && !isFloat && !Number.isSafeInteger(n) && BigInt(n) !== BigInt(m[0])) return BigInt(m[0])
    return n
  }

  private string(): string {
    const s = this.s
    let i = this.i + 1
    let out = ''
    let start = i
    for (;;) {
      if (i >= s.length) {
        this.i = i
        this.fail('Unterminated string')
      }
      const c = s.charCodeAt(i)
      if (c === 0x22) break
      if (c < 0x20) {
        this.i = i
        this.fail('Invalid control character')
      }
      if (c !== 0x5c) {
        i++
        continue
      }
      out += s.slice(start, i)
      const e = s[i + 1]
      switch (e) {
        case '"':
          out += '"'
          break
        case '\\':
          out += '\\'
          break
        case '/':
          out += '/'
          break
        case 'b':
          out += '\b'
          break
        case 'f':
          out += '\f'
          break
        case 'n':
          out += '\n'
          break
        case 'r':
          out += '\r'
          break
        case 't':
          out += '\t'
          break
        case 'u': {
          const hex = s.slice(i + 2, i + 6)
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) {
            this.i = i
            this.fail('Invalid \\uXXXX escape')
          }
          out += String.fromCharCode(parseInt(hex, 16))
          i += 4
          break
        }
        default:
          this.i = i
          this.fail('Invalid \\escape')
      }
      i += 2
      start = i
    }
    out += s.slice(start, i)
    this.i = i + 1
    return out
  }

  private enter(): void {
    if (++this.depth > PARSER_MAX_DEPTH) this.fail(`Nesting deeper than ${PARSER_MAX_DEPTH} levels`)
  }

  private array(): unknown[] {
    this.i++
    this.enter()
    const out: unknown[] = []
    this.ws()
    if (this.s[this.i] === ']') {
      this.i++
      this.depth--
      return out
    }
    for (;;) {
      out.push(this.value())
      this.ws()
      const c = this.s[this.i++]
      if (c === ']') {
        this.depth--
        return out
      }
      if (c !== ',') {
        this.i--
        this.fail("Expecting ',' delimiter")
      }
    }
  }

  private object(): Record<string, unknown> {
    this.i++
    this.enter()
    const out: Record<string, unknown> = {}
    this.ws()
    if (this.s[this.i] === '}') {
      this.i++
      this.depth--
      return out
    }
    for (;;) {
      this.ws()
      if (this.s[this.i] !== '"') this.fail('Expecting property name enclosed in double quotes')
      const key = this.string()
      this.ws()
      if (this.s[this.i++] !== ':') {
        this.i--
        this.fail("Expecting ':' delimiter")
      }
      const v = this.value()
      // A plain assignment to "__proto__" would change the prototype instead.
      Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true })
      this.ws()
      const c = this.s[this.i++]
      if (c === '}') {
        this.depth--
        return out
      }
      if (c !== ',') {
        this.i--
        this.fail("Expecting ',' delimiter")
      }
    }
  }
}
