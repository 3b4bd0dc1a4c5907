// Python's repr() for JSON-ish values, and Celery's saferepr (the streaming,
// truncating repr used for argsrepr/kwargsrepr, `celery/utils/saferepr.py`).
// They differ on purpose: saferepr always single-quotes strings, escapes only
// the quote, and leaves newlines raw, so the two must not share a string path.

import { PyFloat, PyTuple, formatPyFloat, formatPyNumber } from './py-types.js'

export { PyTuple } from './py-types.js'

// Python's str.isprintable() is false for these categories (space excepted).
const NON_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u

function hex(n: number, width: number): string {
  return n.toString(16).padStart(width, '0')
}

/** Python's `repr(str)`: its quote choice and escapes. */
export function pyStrRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'"
  let out = quote
  for (const ch of s) {
    const cp = ch.codePointAt(0) as number
    if (ch === quote || ch === '\\') out += `\\${ch}`
    else if (ch === '\t') out += '\\t'
    else if (ch === '\n') out += '\\n'
    else if (ch === '\r') out += '\\r'
    else if (cp < 0x20 || cp === 0x7f) out += `\\x${hex(cp, 2)}`
    else if (cp < 0x7f) out += ch
    else if (ch !== ' ' && NON_PRINTABLE.test(ch)) {
      out += cp <= 0xff ? `\\x${hex(cp, 2)}` : cp <= 0xffff ? `\\u${hex(cp, 4)}` : `\\U${hex(cp, 8)}`
    } else out += ch
  }
  return out + quote
}

/** Python's `repr(bytes)`. */
export function pyBytesRepr(b: Uint8Array): string {
  let hasSingle = false
  let hasDouble = false
  for (const c of b) {
    if (c === 0x27) hasSingle = true
    else if (c === 0x22) hasDouble = true
  }
  const quote = hasSingle && !hasDouble ? '"' : "'"
  let out = `b${quote}`
  for (const c of b) {
    const ch = String.fromCharCode(c)
    if (ch === quote || ch === '\\') out += `\\${ch}`
    else if (ch === '\t') out += '\\t'
    else if (ch === '\n') out += '\\n'
    else if (ch === '\r') out += '\\r'
    else if (c < 0x20 || c >= 0x7f) out += `\\x${hex(c, 2)}`
    else out += ch
  }
  return out + quote
}

function dateRepr(d: Date): string {
  const parts = [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes()]
  const us = d.getUTCMilliseconds() * 1000
  if (d.getUTCSeconds() || us) parts.push(d.getUTCSeconds())
  if (us) parts.push(us)
  return `datetime.datetime(${parts.join(', ')}, tzinfo=datetime.timezone.utc)`
}

function isDictLike(v: object): boolean {
  return !(v instanceof PyTuple || Array.isArray(v) || v instanceof Set || v instanceof Date || v instanceof Uint8Array)
}

function entriesOf(v: object): Array<[unknown, unknown]> {
  if (v instanceof Map) return [...v.entries()]
  return Object.entries(v).filter(([, x]) => x !== undefined)
}

function scalarRepr(value: unknown): string | undefined {
  if (value === null || value === undefined) return 'None'
  switch (typeof value) {
    case 'string':
      return pyStrRepr(value)
    case 'boolean':
      return value ? 'True' : 'False'
    case 'number':
      return Number.isFinite(value) ? formatPyNumber(value) : formatPyFloat(value)
    case 'bigint':
      return value.toString()
    case 'object':
      break
    default:
      return `<${typeof value}>`
  }
  if (value instanceof PyFloat) return formatPyFloat(value.value)
  if (value instanceof Date) return dateRepr(value)
  if (value instanceof Uint8Array) return pyBytesRepr(value)
  return undefined
}

function reprInner(value: unknown, seen: Set<object>): string {
  const scalar = scalarRepr(value)
  if (scalar !== undefined) return scalar
  const obj = value as object
  if (seen.has(obj)) return Array.isArray(obj) ? '[...]' : isDictLike(obj) ? '{...}' : '(...)'
  seen.add(obj)
  try {
    if (obj instanceof PyTuple) {
      const items = obj.items.map((x) => reprInner(x, seen))
      return items.length === 1 ? `(${items[0]},)` : `(${items.join(', ')})`
    }
    if (Array.isArray(obj)) return `[${obj.map((x) => reprInner(x, seen)).join(', ')}]`
    if (obj instanceof Set) return obj.size === 0 ? 'set()' : `{${[...obj].map((x) => reprInner(x, seen)).join(', ')}}`
    return `{${entriesOf(obj)
      .map(([k, v]) => `${reprInner(k, seen)}: ${reprInner(v, seen)}`)
      .join(', ')}}`
  } finally {
    seen.delete(obj)
  }
}

/** Python's `repr()` of a JSON-ish value (PyTuple for tuples, PyFloat for floats). */
export function pyRepr(value: unknown): string {
  return reprInner(value, new Set())
}

/** Python's `str()`: strings as they are, everything else as repr. */
export function pyStr(value: unknown): string {
  return typeof value === 'string' ? value : pyRepr(value)
}

// ---- saferepr: a token-stream port, so truncation lands where Celery's does.

class Literal {
  constructor(
    readonly value: string,
    readonly truncate: boolean,
    readonly direction: number,
  ) {}
}
class Key {
  constructor(readonly value: unknown) {}
}
class Quoted {
  constructor(readonly value: string | Uint8Array) {}
}
class Dirty {
  constructor(readonly obj: object) {}
}
class Text {
  constructor(readonly value: string) {}
}

const DICT_START = new Literal('{', false, +1)
const DICT_KVSEP = new Literal(': ', true, 0)
const DICT_END = new Literal('}', false, -1)
const LIST_START = new Literal('[', false, +1)
const LIST_END = new Literal(']', false, -1)
const LIST_SEP = new Literal(', ', true, 0)
const SET_START = new Literal('{', false, +1)
const SET_END = new Literal('}', false, -1)
const TUPLE_START = new Literal('(', false, +1)
const TUPLE_END = new Literal(')', false, -1)
const TUPLE_END_SV = new Literal(',)', false, -1)

type Token = Literal | Key | Quoted | Text

const HAS_SURROGATE = /[\ud800-\udfff]/

// Python measures and slices strings in code points, not UTF-16 units.
function cpLength(s: string): number {
  return HAS_SURROGATE.test(s) ? [...s].length : s.length
}
function cpSlice(s: string, n: number): string {
  return HAS_SURROGATE.test(s) ? [...s].slice(0, n).join('') : s.slice(0, n)
}

/** `celery.utils.text.truncate`: note `>=`, so a string exactly maxlen long still gets '...'. */
function truncate(s: string, maxlen: number | null): string {
  if (maxlen && cpLength(s) >= maxlen) {
    const head = cpSlice(s, maxlen)
    const j = head.lastIndexOf(' ')
    return (j >= 0 ? head.slice(0, j) : head) + '...'
  }
  return s
}

function* chainList(items: readonly unknown[]): Iterator<unknown> {
  for (let i = 0; i < items.length; i++) {
    yield items[i]
    if (i < items.length - 1) yield LIST_SEP
  }
}

function* chainDict(entries: ReadonlyArray<[unknown, unknown]>): Iterator<unknown> {
  for (let i = 0; i < entries.length; i++) {
    const [k, v] = entries[i] as [unknown, unknown]
    yield new Key(k)
    yield DICT_KVSEP
    yield v
    if (i < entries.length - 1) yield LIST_SEP
  }
}

function* chain(head: Literal, inner: Iterator<unknown>, dirty: Dirty, end: Literal, rest: Iterator<unknown>): Iterator<unknown> {
  yield head
  for (let r = inner.next(); !r.done; r = inner.next()) yield r.value
  yield dirty
  yield end
  for (let r = rest.next(); !r.done; r = rest.next()) yield r.value
}

function* reprstream(stack: Array<Iterator<unknown>>, seen: Set<object>, maxlevels: number): Generator<[Token, Iterator<unknown>]> {
  let level = 0
  while (stack.length > 0) {
    const it = stack.shift() as Iterator<unknown>
    for (let r = it.next(); !r.done; r = it.next()) {
      const val = r.value
      if (val instanceof Dirty) {
        seen.delete(val.obj)
        continue
      }
      if (val instanceof Literal) {
        level += val.direction
        yield [val, it]
        continue
      }
      if (val instanceof Key) {
        yield [val, it]
        continue
      }
      if (typeof val === 'string' || val instanceof Uint8Array) {
        yield [new Quoted(val), it]
        continue
      }
      if (typeof val === 'number') {
        yield [new Text(Number.isFinite(val) ? formatPyNumber(val) : formatPyFloat(val)), it]
        continue
      }
      if (typeof val === 'boolean') {
        yield [new Text(val ? 'True' : 'False'), it]
        continue
      }
      if (typeof val === 'bigint') {
        yield [new Text(val.toString()), it]
        continue
      }
      if (val instanceof PyFloat) {
        yield [new Text(formatPyFloat(val.value)), it]
        continue
      }
      if (val === null || typeof val !== 'object' || val instanceof Date) {
        yield [new Text(pyRepr(val)), it]
        continue
      }
      let start: Literal, end: Literal, inner: Iterator<unknown>
      if (val instanceof Set) {
        if (val.size === 0) {
          yield [new Text('set()'), it]
          continue
        }
        ;[start, end, inner] = [SET_START, SET_END, chainList([...val])]
      } else if (val instanceof PyTuple) {
        ;[start, end, inner] = [TUPLE_START, val.items.length === 1 ? TUPLE_END_SV : TUPLE_END, chainList(val.items)]
      } else if (Array.isArray(val)) {
        ;[start, end, inner] = [LIST_START, LIST_END, chainList(val)]
      } else {
        ;[start, end, inner] = [DICT_START, DICT_END, chainDict(entriesOf(val))]
      }
      if (maxlevels && level >= maxlevels) {
        yield [new Text(`${start.value}...${end.value}`), it]
        continue
      }
      if (seen.has(val)) {
        yield [new Text(`<Recursion on ${Array.isArray(val) ? 'list' : 'dict'}>`), it]
        continue
      }
      seen.add(val)
      // The rest of this level rides along as the tail, like Celery's linked chain.
      stack.push(chain(start, inner, new Dirty(val), end, it))
      break
    }
  }
}

function formatBytes(b: Uint8Array, maxlen: number | null): string {
  const text = (x: Uint8Array): string => {
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(x)
    } catch {
      return [...x].map((c) => hex(c, 2)).join('')
    }
  }
  if (maxlen && b.length > maxlen) return `b'${text(b.subarray(0, maxlen))}...'`
  return `b'${text(b)}'`
}

function* saferepr_(o: unknown, maxlen: number | null, maxlevels: number): Generator<string> {
  const stack: Array<Iterator<unknown>> = [[o][Symbol.iterator]()]
  let left = maxlen
  for (const [token, it] of reprstream(stack, new Set(), maxlevels)) {
    if (left !== null && left <= 0) {
      yield ', ...'
      // Celery re-queues the rest so its closing brackets are still printed.
      stack.push(it)
      break
    }
    let val: string
    if (token instanceof Literal) val = token.value
    else if (token instanceof Key) val = saferepr(token.value, left, maxlevels)
    else if (token instanceof Quoted) {
      val = typeof token.value === 'string' ? `'${truncate(token.value, left).replaceAll("'", "\\'")}'` : formatBytes(token.value, left)
    } else val = truncate(token.value, left)
    yield val
    if (left !== null) left -= cpLength(val)
  }
  for (const rest of stack) {
    for (let r = rest.next(); !r.done; r = rest.next()) {
      if (r.value instanceof Literal && !r.value.truncate) yield r.value.value
    }
  }
}

/**
 * `celery.utils.saferepr.saferepr`: repr with strings always single-quoted,
 * containers nested deeper than maxlevels shown as `[...]`, and output cut
 * near maxlen with `...` (closing brackets kept). `maxlen` null = no limit.
 */
export function saferepr(value: unknown, maxlen: number | null = 1024, maxlevels = 3): string {
  return [...saferepr_(value, maxlen, maxlevels)].join('')
}

/** Celery's argsrepr_maxsize / kwargsrepr_maxsize. */
export const REPR_MAXSIZE = 1024

// Every send writes argsrepr and kwargsrepr, and most sends carry a few
// numbers or short strings, where the token stream above costs more than the
// rest of the message. For those the text is written directly: one level, no
// container, so maxlevels cannot apply, and kept under QUICK_LIMIT UTF-16
// units (never fewer code points), so no token reaches saferepr's `left` and
// nothing is cut. Anything else goes through saferepr.
const QUICK_LIMIT = 1000

function quickScalar(v: unknown): string | undefined {
  switch (typeof v) {
    case 'string':
      return v.includes("'") ? `'${v.replaceAll("'", "\\'")}'` : `'${v}'`
    case 'number':
      return Number.isFinite(v) ? formatPyNumber(v) : formatPyFloat(v)
    case 'boolean':
      return v ? 'True' : 'False'
    case 'bigint':
      return v.toString()
    case 'object':
      return v === null ? 'None' : undefined
    default:
      return undefined
  }
}

function quickArgsRepr(args: readonly unknown[]): string | undefined {
  let out = '('
  for (let i = 0; i < args.length; i++) {
    const r = quickScalar(args[i])
    if (r === undefined) return undefined
    out += i === 0 ? r : `, ${r}`
    if (out.length > QUICK_LIMIT) return undefined
  }
  return args.length === 1 ? `${out},)` : `${out})`
}

function quickKwargsRepr(kwargs: Record<string, unknown>): string | undefined {
  const proto = Object.getPrototypeOf(kwargs)
  if (proto !== Object.prototype && proto !== null) return undefined
  let out = '{'
  for (const k of Object.keys(kwargs)) {
    const v = kwargs[k]
    if (v === undefined) continue
    const r = quickScalar(v)
    if (r === undefined) return undefined
    out += `${out.length > 1 ? ', ' : ''}${quickScalar(k)}: ${r}`
    if (out.length > QUICK_LIMIT) return undefined
  }
  return `${out}}`
}

/** The `argsrepr` header: positional args are a tuple, so `[2, 3]` gives `(2, 3)`. */
export function argsRepr(args: readonly unknown[]): string {
  return quickArgsRepr(args) ?? saferepr(new PyTuple([...args]), REPR_MAXSIZE)
}

/** The `kwargsrepr` header. */
export function kwargsRepr(kwargs: Record<string, unknown>): string {
  return quickKwargsRepr(kwargs) ?? saferepr(kwargs, REPR_MAXSIZE)
}
