// The limits a pickle is read under, and the one error for whatever pickle
// tsq will not read or write: a value past a limit is refused before anything
// reads it out, as a hostile row should cost nothing.
import { ProtocolError } from '../errors.js'
import { PyTuple } from './py-types.js'

export class PickleValueRefusedError extends ProtocolError {
  constructor(message: string) {
    super('UNSAFE_PICKLE', message)
  }
}

/** Bytes of a pickle read at all (a result row past it is refused before it is read). */
export const MAX_PICKLE_BYTES = 64 * 1024 * 1024
/** Bytes of one LONG1/LONG4 int: a bigger one takes seconds to write out as digits (this one about 631,000). */
export const MAX_PICKLE_INT_BYTES = 256 * 1024
/** Digits of a protocol-0 INT/LONG, Python's own limit for int() of a str (sys.int_info.default_max_str_digits). */
export const MAX_PICKLE_INT_DIGITS = 4300
/** Levels a read value may nest (as many as dumpsPickle writes). */
export const MAX_PICKLE_DEPTH = 200
/** Values a read value may hold once every shared reference is expanded, as JSON or a repr would write it out. */
export const MAX_PICKLE_VALUES = 1_000_000
/** Characters of str, bytes and dict keys, counted the same way. */
export const MAX_PICKLE_CHARS = 64 * 1024 * 1024

function isContainer(v: unknown): v is object {
  if (v instanceof PyTuple || Array.isArray(v)) return true
  if (v === null || typeof v !== 'object') return false
  const proto = Object.getPrototypeOf(v)
  return proto === Object.prototype || proto === null
}

interface Expanded {
  values: number
  chars: number
}

/**
 * Refuses a value that is small in memory but huge written out: the memo lets
 * a 164-byte pickle hold a list of two references to a list of two
 * references... (2^25 values), or refer to itself. Each container is measured
 * once, a shared one counted in full wherever it is used, with a stack of
 * its own (no recursion), and the walk stops at the first limit passed.
 */
export function checkExpansion(root: unknown): void {
  const measured = new Map<object, Expanded>()
  const open = new Set<object>()
  const frames: { node: object; items: unknown[]; next: number; values: number; chars: number }[] = []
  const tooBig = (): PickleValueRefusedError =>
    new PickleValueRefusedError(
      `refusing a pickle that expands to more than ${MAX_PICKLE_VALUES} values or ${MAX_PICKLE_CHARS} characters (shared references counted each time they are used)`,
    )
  const add = (into: { values: number; chars: number }, e: Expanded): void => {
    into.values += e.values
    into.chars += e.chars
    if (into.values > MAX_PICKLE_VALUES || into.chars > MAX_PICKLE_CHARS) throw tooBig()
  }
  /** A leaf's or an already measured container's size, or null once a container's frame is pushed. */
  const enter = (v: unknown): Expanded | null => {
    if (!isContainer(v)) return { values: 1, chars: typeof v === 'string' || v instanceof Uint8Array ? v.length : 0 }
    const known = measured.get(v)
    if (known) return known
    if (open.has(v)) throw new PickleValueRefusedError('refusing a pickle whose value contains itself')
    if (frames.length >= MAX_PICKLE_DEPTH)
      throw new PickleValueRefusedError(`refusing a pickle that nests deeper than ${MAX_PICKLE_DEPTH} levels`)
    open.add(v)
    let items: unknown[]
    let chars = 0
    if (v instanceof PyTuple) items = v.items
    else if (Array.isArray(v)) items = v
    else {
      items = Object.values(v)
      for (const key of Object.keys(v)) chars += key.length
    }
    frames.push({ node: v, items, next: 0, values: 1, chars })
    return null
  }
  const first = enter(root)
  if (first) return
  while (frames.length) {
    const frame = frames[frames.length - 1]!
    if (frame.next < frame.items.length) {
      const e = enter(frame.items[frame.next++])
      if (e) add(frame, e)
      continue
    }
    frames.pop()
    open.delete(frame.node)
    const e = { values: frame.values, chars: frame.chars }
    measured.set(frame.node, e)
    if (frames.length) add(frames[frames.length - 1]!, e)
  }
}
