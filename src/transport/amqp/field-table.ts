// AMQP field tables (message headers, queue and consumer arguments) written as
// py-amqp, the client under Python Celery, reads them, and read as every
// client we meet writes them.
//
// Why not amqplib's own codec: it writes each integer with the narrowest tag,
// `b` for -128..127 and `s` for 16 bits. py-amqp reads `b` as unsigned and `s`
// as a short *string*, so a 16-bit header (a time limit of 300, a clock of
// 288) reached a Python worker as a one-character string, or put the rest of
// the table out of step and killed its connection on every redelivery. And
// amqplib cannot read `L`, which py-amqp writes for every integer past 32 bits
// (a millisecond timestamp in a user's header): a message from Python killed
// the tsq worker's connection the same way. amqplib has no hook for table
// types, so this module replaces its two table functions (install-codec.ts).
//
// What py-amqp 5.1 writes: S (str and bytes), t, d (float), I (int within
// ±2**31-1), L (signed 64-bit beyond), D, T (seconds), F, A, V. What it reads
// differently from RabbitMQ and the errata: b unsigned, B signed, s short
// string, U signed 16-bit, l unsigned 64-bit, D with signed digits. So tsq
// writes only tags both sides read alike: S t d I L D T F A V x.
import { codedError, ProtocolError } from '../../protocol/index.js'

/** Property of a decoded table that could not be read (a tag no client writes); the table holds nothing else. */
export const UNREADABLE_TABLE: unique symbol = Symbol.for('tsq.amqp.unreadableTable')

const INT32_MAX = 2_147_483_647
/** py-amqp writes -2**31 as `L` too (its range check is symmetric), so tsq does the same. */
const INT32_MIN = -2_147_483_647
const INT64_MAX = 2n ** 63n - 1n
const INT64_MIN = -(2n ** 63n)
const TWO_POW_63 = 2 ** 63

/** amqplib's escape hatch for a typed value, `{ '!': 'timestamp', value: 1700000000 }`, still honoured. */
interface TypedValue {
  '!': string
  value: unknown
}

function isTyped(value: object): value is TypedValue {
  return Object.prototype.hasOwnProperty.call(value, '!')
}

/** A value an AMQP field table cannot hold, or a table that cannot be read. */
export class FieldTableError extends codedError('FIELD_TABLE', ProtocolError) {}

// ---- encoding ----------------------------------------------------------

/**
 * Writes `table` at `offset` as a 4-byte length and its fields; returns the
 * bytes written (amqplib's encodeTable contract). Undefined values are left
 * out, as amqplib does.
 */
export function encodeTable(buffer: Buffer, table: Record<string, unknown>, offset: number): number {
  const start = offset
  offset += 4
  for (const key in table) {
    const value = table[key]
    if (value === undefined) continue
    const len = writeUtf8(buffer, key, offset + 1)
    if (len > 255) throw new FieldTableError(`field name longer than 255 bytes: ${key.slice(0, 40)}...`)
    buffer.writeUInt8(len, offset)
    offset += 1 + len
    offset += encodeValue(buffer, value, offset)
  }
  buffer.writeUInt32BE(offset - start - 4, start)
  return offset - start
}

/**
 * Buffer#write, but a short ASCII string is copied here: a task's table is a
 * few dozen short names and values, and each write() is a call into C++ that
 * costs several times the loop (bench/README.md#tricks). Anything longer,
 * non-ASCII, or near the buffer's end goes to write().
 */
function writeUtf8(buffer: Buffer, text: string, offset: number): number {
  const n = text.length
  if (n > SHORT_STRING || offset + n > buffer.length) return buffer.write(text, offset, 'utf8')
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i)
    if (c > 0x7f) return buffer.write(text, offset, 'utf8')
    buffer[offset + i] = c
  }
  return n
}

/** Past this length write() is as quick as the loop (measured on node 20). */
const SHORT_STRING = 24

function encodeArray(buffer: Buffer, items: readonly unknown[], offset: number): number {
  const start = offset
  offset += 4
  for (const item of items) offset += encodeValue(buffer, item, offset)
  buffer.writeUInt32BE(offset - start - 4, start)
  return offset - start
}

function encodeValue(buffer: Buffer, value: unknown, offset: number): number {
  const start = offset
  switch (typeof value) {
    case 'string': {
      buffer[offset] = 0x53 // S
      const len = writeUtf8(buffer, value, offset + 5)
      // write() stops short only when the buffer ends, within 3 bytes of its
      // end (a character that does not fit whole); with room left beyond that
      // the whole string was written, and measuring it again is not needed.
      if (buffer.length - (offset + 5 + len) < 4 && len !== Buffer.byteLength(value, 'utf8'))
        throw new RangeError('field table does not fit the frame buffer')
      buffer.writeUInt32BE(len, offset + 1)
      return 5 + len
    }
    case 'boolean':
      buffer[offset] = 0x74 // t
      buffer[offset + 1] = value ? 1 : 0
      return 2
    case 'number':
      return encodeNumber(buffer, value, offset)
    case 'bigint':
      return encodeBigInt(buffer, value, offset)
    case 'undefined':
      buffer[offset] = 0x56 // V: an array's hole, as py-amqp writes None
      return 1
    case 'object':
      break
    default:
      throw new FieldTableError(`cannot write a ${typeof value} in an AMQP field table`)
  }
  if (value === null) {
    buffer[offset] = 0x56 // V
    return 1
  }
  if (Array.isArray(value)) {
    buffer[offset] = 0x41 // A
    return 1 + encodeArray(buffer, value, offset + 1)
  }
  if (Buffer.isBuffer(value)) {
    buffer[offset] = 0x78 // x: py-amqp and RabbitMQ read it as bytes
    buffer.writeUInt32BE(value.length, offset + 1)
    value.copy(buffer, offset + 5)
    return 5 + value.length
  }
  if (value instanceof Date) {
    offset += writeTag(buffer, 'T', offset)
    buffer.writeBigUInt64BE(BigInt(Math.max(0, Math.floor(value.getTime() / 1000))), offset)
    return offset + 8 - start
  }
  if (isTyped(value)) return encodeTyped(buffer, value, offset)
  buffer[offset] = 0x46 // F
  return 1 + encodeTable(buffer, value as Record<string, unknown>, offset + 1)
}

function writeTag(buffer: Buffer, tag: string, offset: number): number {
  buffer[offset] = tag.charCodeAt(0)
  return 1
}

/** An integer as py-amqp writes one: I within ±(2**31-1), L within 64 bits; anything else is a double. */
function encodeNumber(buffer: Buffer, n: number, offset: number): number {
  if (Number.isInteger(n)) {
    if (n >= INT32_MIN && n <= INT32_MAX) {
      buffer[offset] = 0x49 // I
      buffer.writeInt32BE(n, offset + 1)
      return 5
    }
    if (n >= -TWO_POW_63 && n < TWO_POW_63) {
      buffer[offset] = 0x4c // L
      buffer.writeBigInt64BE(BigInt(n), offset + 1)
      return 9
    }
  }
  buffer[offset] = 0x64 // d
  buffer.writeDoubleBE(n, offset + 1)
  return 9
}

function encodeBigInt(buffer: Buffer, n: bigint, offset: number): number {
  if (n >= INT64_MIN && n <= INT64_MAX) {
    if (n >= BigInt(INT32_MIN) && n <= BigInt(INT32_MAX)) return encodeNumber(buffer, Number(n), offset)
    buffer[offset] = 0x4c // L
    buffer.writeBigInt64BE(n, offset + 1)
    return 9
  }
  // Past 64 bits no AMQP type holds it (py-amqp fails to write one): its digits, exactly.
  return encodeValue(buffer, n.toString(), offset)
}

/** amqplib's `{ '!': type, value }` form, for the few types a plain value cannot say. */
function encodeTyped(buffer: Buffer, typed: TypedValue, offset: number): number {
  const { value } = typed
  switch (typed['!']) {
    case 'timestamp':
      buffer[offset] = 0x54 // T
      buffer.writeBigUInt64BE(BigInt(Math.floor(Number(value))), offset + 1)
      return 9
    case 'decimal': {
      const d = value as { places?: unknown; digits?: unknown }
      if (typeof d?.places !== 'number' || typeof d.digits !== 'number' || d.places < 0 || d.places > 255) {
        throw new FieldTableError(`decimal must be { places: 0..255, digits: int32 }, got ${JSON.stringify(value)}`)
      }
      buffer[offset] = 0x44 // D
      buffer[offset + 1] = d.places
      buffer.writeInt32BE(d.digits, offset + 2)
      return 6
    }
    case 'float':
      buffer[offset] = 0x66 // f
      buffer.writeFloatBE(Number(value), offset + 1)
      return 5
    case 'double':
    case 'float64':
      buffer[offset] = 0x64 // d
      buffer.writeDoubleBE(Number(value), offset + 1)
      return 9
    // Every integer width is written as py-amqp would write the number: the
    // narrow tags are what Python misreads.
    case 'byte':
    case 'int8':
    case 'unsignedbyte':
    case 'uint8':
    case 'short':
    case 'int16':
    case 'unsignedshort':
    case 'uint16':
    case 'int':
    case 'int32':
    case 'unsignedint':
    case 'uint32':
    case 'long':
    case 'int64':
      return typeof value === 'bigint' ? encodeBigInt(buffer, value, offset) : encodeNumber(buffer, Number(value), offset)
    default:
      return encodeValue(buffer, value, offset)
  }
}

// ---- decoding ----------------------------------------------------------

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER)
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER)

/** An integer read from 64 bits: a number where a double holds it exactly, else an exact BigInt. */
function int64Value(n: bigint): number | bigint {
  return n >= MIN_SAFE && n <= MAX_SAFE ? Number(n) : n
}

class Reader {
  offset = 0
  constructor(private readonly slice: Buffer) {}

  table(end: number): Record<string, unknown> {
    const fields: Record<string, unknown> = {}
    const s = this.slice
    while (this.offset < end) {
      const keyStart = this.offset + 1
      this.offset = keyStart + s.readUInt8(keyStart - 1)
      if (this.offset > end) throw new FieldTableError(`field table ends inside a field name (byte ${keyStart} of ${end})`)
      fields[s.toString('utf8', keyStart, this.offset)] = this.value()
    }
    return fields
  }

  /**
   * The bounds of a value with a 4-byte length in front (S, x, F, A), the
   * cursor moved past it. Fixed-width reads need no such check: Buffer's own
   * throws a RangeError past the end, which decodeFields catches.
   */
  private span(): [number, number] {
    const len = this.slice.readUInt32BE(this.offset)
    const start = this.offset + 4
    this.offset = start + len
    if (this.offset > this.slice.length)
      throw new FieldTableError(`field table ends inside a value (byte ${start} of ${this.slice.length})`)
    return [start, this.offset]
  }

  // The reads are written out, in two switches (fixed widths, then the rest):
  // this runs for every header of every message, and helper closures here
  // cost a third more than amqplib's decoder.
  value(): unknown {
    const s = this.slice
    const at = this.offset
    const tagByte = s.readUInt8(at)
    const o = at + 1
    const width = FIXED_WIDTH[tagByte]!
    if (width !== VARIABLE) {
      // Past the value first: a read past the end throws, and decodeFields gives up the whole table.
      this.offset = o + width
      return fixedValue(s, tagByte, o)
    }
    switch (tagByte) {
      case 0x53: {
        // S
        this.offset = o
        const [start, end] = this.span()
        return s.toString('utf8', start, end)
      }
      case 0x46: {
        // F
        this.offset = o
        const [start, end] = this.span()
        this.offset = start
        return this.table(end)
      }
      case 0x41: {
        // A
        this.offset = o
        const [start, end] = this.span()
        this.offset = start
        const items: unknown[] = []
        while (this.offset < end) items.push(this.value())
        return items
      }
      case 0x78: {
        // x
        this.offset = o
        const [start, end] = this.span()
        return s.subarray(start, end)
      }
      default:
        throw new FieldTableError(
          `unknown field type tag ${JSON.stringify(String.fromCharCode(tagByte))} (0x${tagByte.toString(16).padStart(2, '0')}) at byte ${at}`,
        )
    }
  }
}

/** Bytes after the tag of each value of fixed size; VARIABLE for S, F, A, x (a length in front) and unknown tags. */
const VARIABLE = 0xff
const FIXED_WIDTH = new Uint8Array(256).fill(VARIABLE)
for (const [tag, width] of Object.entries({ I: 4, t: 1, V: 0, L: 8, l: 8, d: 8, f: 4, b: 1, B: 1, s: 2, U: 2, u: 2, i: 4, D: 5, T: 8 }))
  FIXED_WIDTH[tag.charCodeAt(0)] = width

/** The value of fixed size at `o`, after the tag. */
function fixedValue(s: Buffer, tag: number, o: number): unknown {
  switch (tag) {
    case 0x49: // I
      return s.readInt32BE(o)
    case 0x74: // t
      return s.readUInt8(o) !== 0
    case 0x56: // V
      return null
    case 0x4c: // L: py-amqp writes signed 64-bit under it
    case 0x6c: // l: signed 64-bit for RabbitMQ (x-death's count) and amqplib
      return int64Value(s.readBigInt64BE(o))
    case 0x64: // d
      return s.readDoubleBE(o)
    case 0x66: // f
      return s.readFloatBE(o)
    case 0x62: // b: signed, as RabbitMQ and the errata say (py-amqp never writes it)
      return s.readInt8(o)
    case 0x42: // B
      return s.readUInt8(o)
    case 0x73: // s: a signed short for RabbitMQ, amqplib and Java; py-amqp's short string is never written
    case 0x55: // U: the 0-9 spec's signed short, which py-amqp reads
      return s.readInt16BE(o)
    case 0x75: // u
      return s.readUInt16BE(o)
    case 0x69: // i
      return s.readUInt32BE(o)
    case 0x44: // D: digits signed, as py-amqp writes a negative Decimal
      return s.readInt32BE(o + 1) / 10 ** s.readUInt8(o)
    default: // T: seconds since the epoch (the last tag FIXED_WIDTH gives a width)
      return int64Value(s.readBigUInt64BE(o))
  }
}

/**
 * Reads a table's fields (amqplib's decodeFields contract: the slice holds
 * just the fields). A table that cannot be read does not throw: amqplib would
 * take the whole connection down, and the broker would deliver the same
 * message again, for ever. The frame around it is still read in step (its
 * length is known), and the table comes back empty but for UNREADABLE_TABLE,
 * the reason, for the consumer to reject the message with.
 */
export function decodeFields(slice: Buffer): Record<string, unknown> {
  const reader = new Reader(slice)
  try {
    return reader.table(slice.length)
  } catch (error) {
    if (!(error instanceof FieldTableError) && !(error instanceof RangeError)) throw error
    const table: Record<string | symbol, unknown> = {}
    Object.defineProperty(table, UNREADABLE_TABLE, { value: error.message, enumerable: false })
    return table as Record<string, unknown>
  }
}

/** The reason a decoded table could not be read, or undefined. */
export function unreadableReason(table: object | undefined | null): string | undefined {
  if (!table) return undefined
  const reason = (table as Record<symbol, unknown>)[UNREADABLE_TABLE]
  return typeof reason === 'string' ? reason : undefined
}
