// The writing half of the plain pickle (plain-pickle.ts reads): plain values
// as Python's pickle.dumps writes them, and the one call Celery's database
// backend keeps in celery_tasksetmeta (a GroupResult), spelled out as a call.
import { PyFloat, PyTuple } from './py-types.js'
import { PickleValueRefusedError } from './plain-pickle-limits.js'

/**
 * A call the writer spells out for a shape Python reads as an object (the
 * GroupResult Celery keeps in celery_tasksetmeta). Reading never builds one:
 * it exists only to be written, and `loadsGroupPickle` recognises the one
 * shape it needs without executing anything.
 */
export class PickleCall {
  constructor(
    readonly module: string,
    readonly name: string,
    readonly args: unknown[],
  ) {}
}

class Writer {
  private chunks: Buffer[] = []
  private size = 0
  push(b: Buffer): void {
    this.chunks.push(b)
    this.size += b.length
  }
  op(code: number, payload?: Buffer): void {
    this.push(Buffer.from([code]))
    if (payload) this.push(payload)
  }
  concat(): Buffer {
    return Buffer.concat(this.chunks, this.size)
  }
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4)
  b.writeUInt32LE(n)
  return b
}

function u64(n: number): Buffer {
  const b = Buffer.alloc(8)
  b.writeBigUInt64LE(BigInt(n))
  return b
}

/** Python's encode_long: little-endian two's complement, as few bytes as hold the sign. */
function longBytes(x: bigint): Buffer {
  if (x === 0n) return Buffer.alloc(0)
  const bytes: number[] = []
  let v = x
  for (;;) {
    bytes.push(Number(v & 0xffn))
    v >>= 8n
    const top = bytes[bytes.length - 1]!
    if ((v === 0n && top < 0x80) || (v === -1n && top >= 0x80)) break
  }
  return Buffer.from(bytes)
}

function writeInt(w: Writer, x: bigint): void {
  if (x >= 0n && x < 256n) return w.op(0x4b, Buffer.from([Number(x)]))
  if (x >= 0n && x < 65536n) {
    const b = Buffer.alloc(2)
    b.writeUInt16LE(Number(x))
    return w.op(0x4d, b)
  }
  if (x >= -(2n ** 31n) && x < 2n ** 31n) {
    const b = Buffer.alloc(4)
    b.writeInt32LE(Number(x))
    return w.op(0x4a, b)
  }
  const body = longBytes(x)
  if (body.length < 256) return w.op(0x8a, Buffer.concat([Buffer.from([body.length]), body]))
  w.op(0x8b, Buffer.concat([u32(body.length), body]))
}

function writeStr(w: Writer, s: string): void {
  const b = Buffer.from(s, 'utf8')
  if (b.length < 256) w.op(0x8c, Buffer.concat([Buffer.from([b.length]), b]))
  else if (b.length < 2 ** 32) w.op(0x58, Buffer.concat([u32(b.length), b]))
  else w.op(0x8d, Buffer.concat([u64(b.length), b]))
}

function writeBytes(w: Writer, b: Uint8Array): void {
  const buf = Buffer.from(b)
  if (buf.length < 256) w.op(0x43, Buffer.concat([Buffer.from([buf.length]), buf]))
  else if (buf.length < 2 ** 32) w.op(0x42, Buffer.concat([u32(buf.length), buf]))
  else w.op(0x8e, Buffer.concat([u64(buf.length), buf]))
}

const MARK = 0x28

function writeItems(w: Writer, items: unknown[], depth: number): void {
  for (const item of items) writeValue(w, item, depth + 1)
}

function writeTuple(w: Writer, items: unknown[], depth: number): void {
  if (items.length === 0) return w.op(0x29)
  if (items.length <= 3) {
    writeItems(w, items, depth)
    return w.op([0x85, 0x86, 0x87][items.length - 1]!)
  }
  w.op(MARK)
  writeItems(w, items, depth)
  w.op(0x74)
}

function writeValue(w: Writer, v: unknown, depth: number): void {
  if (depth > 200) throw new PickleValueRefusedError('value nests too deeply to pickle')
  if (v === null || v === undefined) return w.op(0x4e)
  if (v === true) return w.op(0x88)
  if (v === false) return w.op(0x89)
  if (typeof v === 'bigint') return writeInt(w, v)
  if (v instanceof PyFloat) return writeFloat(w, v.value)
  // An integral number is an int, as kombu's JSON writes it (2**70 too); floats with integral values come as PyFloat.
  if (typeof v === 'number') return Number.isInteger(v) ? writeInt(w, BigInt(v)) : writeFloat(w, v)
  if (typeof v === 'string') return writeStr(w, v)
  if (v instanceof Uint8Array) return writeBytes(w, v)
  if (v instanceof PyTuple) return writeTuple(w, v.items, depth)
  if (v instanceof PickleCall) {
    writeStr(w, v.module)
    writeStr(w, v.name)
    w.op(0x93)
    writeTuple(w, v.args, depth)
    return w.op(0x52)
  }
  if (Array.isArray(v)) {
    w.op(0x5d)
    if (v.length === 0) return
    w.op(MARK)
    writeItems(w, v, depth)
    return w.op(0x65)
  }
  if (
    (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) ||
    (typeof v === 'object' && Object.getPrototypeOf(v) === null)
  ) {
    const entries = Object.entries(v as Record<string, unknown>)
    w.op(0x7d)
    if (entries.length === 0) return
    w.op(MARK)
    for (const [k, item] of entries) {
      writeStr(w, k)
      writeValue(w, item, depth + 1)
    }
    return w.op(0x75)
  }
  throw new PickleValueRefusedError(`cannot pickle a ${(v as object)?.constructor?.name ?? typeof v} (plain values only)`)
}

function writeFloat(w: Writer, x: number): void {
  const b = Buffer.alloc(8)
  b.writeDoubleBE(x)
  w.op(0x47, b)
}

/**
 * `pickle.dumps(value, protocol=5)` as SQLAlchemy's PickleType calls it
 * (HIGHEST_PROTOCOL on Python 3.11): PROTO 5, the body in one FRAME (none
 * under 4 bytes, as Python's framer), STOP. Memo opcodes are left out;
 * readers do not need them.
 */
export function dumpsPickle(value: unknown): Buffer {
  const w = new Writer()
  writeValue(w, value, 0)
  w.op(0x2e)
  const body = w.concat()
  if (body.length < 4) return Buffer.concat([Buffer.from([0x80, 5]), body])
  const head = Buffer.from([0x80, 5, 0x95])
  return Buffer.concat([head, u64(body.length), body])
}

/** A GroupResult pickle as Celery's database backend writes one, its members bound to the reader's app. */
export function dumpsGroupPickle(groupId: string, taskIds: string[]): Buffer {
  return dumpsPickle(
    new PickleCall('celery.result', 'GroupResult', [groupId, taskIds.map((id) => new PickleCall('celery.result', 'AsyncResult', [id]))]),
  )
}
