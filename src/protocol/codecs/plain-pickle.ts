// A strict subset of Python's pickle for the SQL result backends, whose
// `result` column is SQLAlchemy's PickleType. Only plain values pass: None,
// bools, ints of any size, floats, str, bytes, lists, tuples and dicts. The
// reader is a small pickle machine that knows no code at all: an opcode that
// would look up a global or call something is refused before anything else
// happens, so a hostile row can at worst be unreadable.
//
// Written by hand because no maintained npm package offers a pickle reader
// that is safe by construction (the ones there are resolve globals through a
// registry of constructors); the subset here is a few dozen opcodes.
//
// Writing is plain-pickle-writer.ts; the limits a read is held to, plain-pickle-limits.ts.
import { PyFloat, PyTuple } from './py-types.js'
import {
  checkExpansion,
  MAX_PICKLE_BYTES,
  MAX_PICKLE_INT_BYTES,
  MAX_PICKLE_INT_DIGITS,
  PickleValueRefusedError,
} from './plain-pickle-limits.js'

/** What a refused opcode would have done, for the one-line message. */
const REFUSED: Record<number, string> = {
  0x63: 'GLOBAL (imports a name)',
  0x93: 'STACK_GLOBAL (imports a name)',
  0x52: 'REDUCE (calls a function)',
  0x62: 'BUILD (sets object state)',
  0x69: 'INST (builds an object)',
  0x6f: 'OBJ (builds an object)',
  0x81: 'NEWOBJ (builds an object)',
  0x92: 'NEWOBJ_EX (builds an object)',
  0x82: 'EXT1 (imports a registered name)',
  0x83: 'EXT2 (imports a registered name)',
  0x84: 'EXT4 (imports a registered name)',
  0x50: 'PERSID (a persistent reference)',
  0x51: 'BINPERSID (a persistent reference)',
  0x8f: 'EMPTY_SET (a set)',
  0x90: 'ADDITEMS (a set)',
  0x91: 'FROZENSET (a set)',
  0x97: 'NEXT_BUFFER (an out-of-band buffer)',
  0x98: 'READONLY_BUFFER (an out-of-band buffer)',
}

/** Globals and calls kept as inert records, for loadsGroupPickle only. */
interface InertGlobal {
  global: string
}
interface InertCall {
  call: InertGlobal
  args: unknown[]
}

interface ReadOptions {
  /** Keep GLOBAL/STACK_GLOBAL/REDUCE as inert records instead of refusing them. */
  inert?: boolean
}

function isInertGlobal(v: unknown): v is InertGlobal {
  return typeof v === 'object' && v !== null && typeof (v as InertGlobal).global === 'string' && Object.keys(v).length === 1
}

function dictKey(k: unknown): string {
  if (typeof k === 'string') return k
  // Python's json.dumps turns these keys into strings the same way; tsq's results are JSON-shaped.
  if (typeof k === 'number' || typeof k === 'bigint') return String(k)
  if (k === true) return 'true'
  if (k === false) return 'false'
  if (k === null) return 'null'
  throw new PickleValueRefusedError('refusing a pickled dict whose key is not a plain scalar')
}

function read(data: Uint8Array, options: ReadOptions): unknown {
  if (data.byteLength > MAX_PICKLE_BYTES)
    throw new PickleValueRefusedError(`refusing a pickle of ${data.byteLength} bytes, over the limit of ${MAX_PICKLE_BYTES}`)
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength)
  let pos = 0
  let stack: unknown[] = []
  const marks: unknown[][] = []
  const memo = new Map<number, unknown>()
  const need = (n: number): number => {
    if (pos + n > buf.length) throw new PickleValueRefusedError('pickle data is truncated')
    const at = pos
    pos += n
    return at
  }
  const pop = (): unknown => {
    if (stack.length === 0) throw new PickleValueRefusedError('malformed pickle (stack underflow)')
    return stack.pop()
  }
  const popMark = (): unknown[] => {
    const items = stack
    const prev = marks.pop()
    if (!prev) throw new PickleValueRefusedError('malformed pickle (no MARK)')
    stack = prev
    return items
  }
  const line = (): string => {
    const end = buf.indexOf(0x0a, pos)
    if (end < 0) throw new PickleValueRefusedError('pickle data is truncated')
    const s = buf.toString('latin1', pos, end)
    pos = end + 1
    return s
  }
  const top = (): unknown => {
    if (stack.length === 0) throw new PickleValueRefusedError('malformed pickle (stack underflow)')
    return stack[stack.length - 1]
  }
  /** A decimal int line (protocol 0), as long as Python's int() reads one. */
  const decimal = (s: string): number | bigint => {
    if (s.replace(/^[+-]/, '').length > MAX_PICKLE_INT_DIGITS)
      throw new PickleValueRefusedError(`refusing a pickled int of more than ${MAX_PICKLE_INT_DIGITS} digits`)
    return int(BigInt(s))
  }
  const int = (x: bigint): number | bigint => (x >= BigInt(Number.MIN_SAFE_INTEGER) && x <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(x) : x)
  const long = (n: number): number | bigint => {
    if (n === 0) return 0
    if (n > MAX_PICKLE_INT_BYTES) throw new PickleValueRefusedError(`refusing a pickled int of more than ${MAX_PICKLE_INT_BYTES} bytes`)
    const at = need(n)
    // Through hex in one step: a byte at a time is quadratic in the length.
    let x = BigInt(
      `0x${Buffer.from(buf.subarray(at, at + n))
        .reverse()
        .toString('hex')}`,
    )
    if (buf[at + n - 1]! & 0x80) x -= 1n << BigInt(8 * n)
    return int(x)
  }
  const str = (n: number): string => {
    const at = need(n)
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(buf.subarray(at, at + n))
    } catch {
      throw new PickleValueRefusedError('malformed pickle (a str that is not UTF-8)')
    }
  }
  const bytes = (n: number): Buffer => {
    const at = need(n)
    return Buffer.from(buf.subarray(at, at + n))
  }
  const setItems = (target: unknown, items: unknown[]): void => {
    // Only a dict this reader made: not a tuple, bytes or float; keys defined, so `__proto__` is a key like any other.
    if (typeof target !== 'object' || target === null || Object.getPrototypeOf(target) !== Object.prototype)
      throw new PickleValueRefusedError('malformed pickle (SETITEMS on a non-dict)')
    for (let i = 0; i + 1 < items.length; i += 2)
      Object.defineProperty(target, dictKey(items[i]), { value: items[i + 1], enumerable: true, writable: true, configurable: true })
  }
  const append = (target: unknown, items: unknown[]): void => {
    if (!Array.isArray(target)) throw new PickleValueRefusedError('malformed pickle (APPEND on a non-list)')
    for (const item of items) target.push(item) // not push(...items): a long MARK run overflows the argument stack
  }
  for (;;) {
    const op = buf[need(1)]!
    switch (op) {
      case 0x80: // PROTO
        if (buf[need(1)]! > 5) throw new PickleValueRefusedError('pickle protocol above 5')
        break
      case 0x95: // FRAME: frames are only a read-ahead hint
        need(8)
        break
      case 0x2e: {
        // STOP
        const v = pop()
        if (marks.length) throw new PickleValueRefusedError('malformed pickle (unclosed MARK)')
        checkExpansion(v)
        return v
      }
      case 0x28:
        marks.push(stack)
        stack = []
        break // MARK
      case 0x30:
        pop()
        break // POP
      case 0x31:
        popMark()
        break // POP_MARK
      case 0x32:
        stack.push(top())
        break // DUP
      case 0x4e:
        stack.push(null)
        break
      case 0x88:
        stack.push(true)
        break
      case 0x89:
        stack.push(false)
        break
      case 0x4b:
        stack.push(buf[need(1)]!)
        break
      case 0x4d:
        stack.push(buf.readUInt16LE(need(2)))
        break
      case 0x4a:
        stack.push(buf.readInt32LE(need(4)))
        break
      case 0x8a:
        stack.push(long(buf[need(1)]!))
        break
      case 0x8b: {
        const n = buf.readInt32LE(need(4))
        if (n < 0) throw new PickleValueRefusedError('malformed pickle (negative LONG4 size)')
        stack.push(long(n))
        break
      }
      case 0x49: {
        // INT (protocol 0), also how protocol 0 spells True/False
        const s = line()
        if (s === '01') stack.push(true)
        else if (s === '00') stack.push(false)
        else if (/^[+-]?\d+$/.test(s)) stack.push(decimal(s))
        else throw new PickleValueRefusedError('malformed pickle INT')
        break
      }
      case 0x4c: {
        // LONG (protocol 0)
        const s = line().replace(/L$/, '')
        if (!/^[+-]?\d+$/.test(s)) throw new PickleValueRefusedError('malformed pickle LONG')
        stack.push(decimal(s))
        break
      }
      case 0x46: {
        // FLOAT (protocol 0): keeps float-ness
        const x = Number(line())
        stack.push(Number.isInteger(x) ? new PyFloat(x) : x)
        break
      }
      case 0x47: {
        const x = buf.readDoubleBE(need(8))
        stack.push(Number.isInteger(x) ? new PyFloat(x) : x)
        break
      }
      case 0x8c:
        stack.push(str(buf[need(1)]!))
        break
      case 0x58:
        stack.push(str(buf.readUInt32LE(need(4))))
        break
      case 0x8d:
        stack.push(str(Number(buf.readBigUInt64LE(need(8)))))
        break
      case 0x56:
        stack.push(
          line().replace(/\\u([0-9a-fA-F]{4})|\\U([0-9a-fA-F]{8})/g, (_m, a: string, b: string) => codePoint(parseInt(a ?? b, 16))),
        )
        break // UNICODE
      case 0x55:
        stack.push(bytes(buf[need(1)]!).toString('latin1'))
        break // SHORT_BINSTRING (Python 2 str)
      case 0x54:
        stack.push(bytes(buf.readUInt32LE(need(4))).toString('latin1'))
        break // BINSTRING
      case 0x43:
        stack.push(bytes(buf[need(1)]!))
        break
      case 0x42:
        stack.push(bytes(buf.readUInt32LE(need(4))))
        break
      case 0x8e:
        stack.push(bytes(Number(buf.readBigUInt64LE(need(8)))))
        break
      case 0x96:
        stack.push(bytes(Number(buf.readBigUInt64LE(need(8)))))
        break // BYTEARRAY8: plain bytes here
      case 0x5d:
        stack.push([])
        break
      case 0x6c: {
        const items = popMark()
        stack.push(items)
        break
      } // LIST (popMark swaps `stack`, so it runs first)
      case 0x61: {
        const v = pop()
        append(top(), [v])
        break
      } // APPEND
      case 0x65: {
        const items = popMark()
        append(top(), items)
        break
      } // APPENDS
      case 0x29:
        stack.push(new PyTuple([]))
        break
      case 0x85:
        stack.push(new PyTuple([pop()]))
        break
      case 0x86: {
        const b = pop()
        stack.push(new PyTuple([pop(), b]))
        break
      }
      case 0x87: {
        const c = pop()
        const b = pop()
        stack.push(new PyTuple([pop(), b, c]))
        break
      }
      case 0x74: {
        const items = popMark()
        stack.push(new PyTuple(items))
        break
      }
      case 0x7d:
        stack.push({})
        break
      case 0x64: {
        const d = {}
        setItems(d, popMark())
        stack.push(d)
        break
      } // DICT
      case 0x73: {
        const v = pop()
        const k = pop()
        setItems(top(), [k, v])
        break
      }
      case 0x75: {
        const items = popMark()
        setItems(top(), items)
        break
      }
      case 0x70:
        memo.set(Number(line()), top())
        break // PUT
      case 0x71:
        memo.set(buf[need(1)]!, top())
        break
      case 0x72:
        memo.set(buf.readUInt32LE(need(4)), top())
        break
      case 0x94:
        memo.set(memo.size, top())
        break // MEMOIZE
      case 0x67:
        stack.push(fromMemo(memo, Number(line())))
        break // GET
      case 0x68:
        stack.push(fromMemo(memo, buf[need(1)]!))
        break
      case 0x6a:
        stack.push(fromMemo(memo, buf.readUInt32LE(need(4))))
        break
      case 0x93: // STACK_GLOBAL
        if (!options.inert) throw refused(op)
        {
          const name = pop()
          const module = pop()
          stack.push({ global: `${String(module)}.${String(name)}` } satisfies InertGlobal)
        }
        break
      case 0x63: // GLOBAL
        if (!options.inert) throw refused(op)
        stack.push({ global: `${line()}.${line()}` } satisfies InertGlobal)
        break
      case 0x52: {
        // REDUCE
        if (!options.inert) throw refused(op)
        const args = pop()
        const fn = pop()
        if (!isInertGlobal(fn) || !(args instanceof PyTuple))
          throw new PickleValueRefusedError('refusing a pickle whose REDUCE is not a plain call')
        stack.push({ call: fn, args: args.items } satisfies InertCall)
        break
      }
      default:
        throw refused(op)
    }
  }
}

function codePoint(n: number): string {
  if (n > 0x10ffff) throw new PickleValueRefusedError('malformed pickle (a \\U escape past U+10FFFF)')
  return String.fromCodePoint(n)
}

function fromMemo(memo: Map<number, unknown>, key: number): unknown {
  if (!memo.has(key)) throw new PickleValueRefusedError('malformed pickle (memo key missing)')
  return memo.get(key)
}

function refused(op: number): PickleValueRefusedError {
  const what = REFUSED[op] ?? `opcode 0x${op.toString(16).padStart(2, '0')}`
  return new PickleValueRefusedError(
    `refusing a pickle that holds ${what}: tsq reads plain values only (None, bools, ints, floats, str, bytes, lists, tuples, dicts) and never runs pickled code`,
  )
}

/**
 * `pickle.loads` limited to plain values: tuples come back as PyTuple, floats
 * with integral values as PyFloat, ints beyond 2^53 as BigInt, bytes as
 * Buffer. Anything else throws PickleValueRefusedError; nothing is called.
 */
export function loadsPickle(data: Uint8Array): unknown {
  return read(data, {})
}

/**
 * The task ids of a GroupResult that Celery's database backend pickled into
 * celery_tasksetmeta (`GroupResult(id, [AsyncResult(id, backend, ...), ...])`).
 * Globals and calls are read as inert records and matched against that one
 * shape, names included; nothing is imported or called, and any other shape
 * is refused.
 */
export function loadsGroupPickle(data: Uint8Array): { groupId: string; taskIds: string[] } {
  const v = read(data, { inert: true }) as InertCall
  const bad = () => new PickleValueRefusedError('refusing a celery_tasksetmeta pickle that is not a GroupResult of AsyncResults')
  if (!v || typeof v !== 'object' || v.call?.global !== 'celery.result.GroupResult') throw bad()
  const [groupId, members] = v.args
  if (typeof groupId !== 'string' || !Array.isArray(members)) throw bad()
  const taskIds = members.map((m: InertCall) => {
    if (!m || m.call?.global !== 'celery.result.AsyncResult' || typeof m.args[0] !== 'string') throw bad()
    return m.args[0]
  })
  return { groupId, taskIds }
}
