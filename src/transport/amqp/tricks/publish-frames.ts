// The three frames of one publish (basic.publish, its content header, the
// body) written straight into one buffer: the bytes amqplib's
// Connection#sendMessage writes for a message under its single-chunk
// threshold, without its four allocations and double copies of the header
// table (bench/README.md#tricks). Only the fields tsq publishes with are
// written; a message it cannot write exactly as amqplib would (past the
// threshold, a short string past 255 bytes, a delivery mode or priority that
// is not a byte) gets undefined and goes through amqplib, which frames it or
// refuses it with its own error. Switch: TSQ_NO_PUBLISH_FRAMES.
import type { PublishFields } from '../publish.js'
import { encodeTable } from '../field-table.js'

/** amqplib's SINGLE_CHUNK_THRESHOLD (lib/connection.js): below it the frames go as one buffer. */
export const SINGLE_CHUNK_THRESHOLD = 2048

const FRAME_METHOD = 1
const FRAME_HEADER = 2
const FRAME_BODY = 3
const FRAME_END = 0xce
/** Class 60 (basic), method 40 (publish). */
const BASIC_PUBLISH = (60 << 16) | 40
/** Class 60, weight 0. */
const BASIC_HEADER = 60 << 16

// The property flags of AMQP 0-9-1's basic class, in amqplib's order.
const F_CONTENT_TYPE = 0x8000
const F_CONTENT_ENCODING = 0x4000
const F_HEADERS = 0x2000
const F_DELIVERY_MODE = 0x1000
const F_PRIORITY = 0x0800
const F_CORRELATION_ID = 0x0400
const F_REPLY_TO = 0x0200
const F_EXPIRATION = 0x0100

/**
 * Where the frames are put together before the exact-size copy: as large as
 * amqplib's own scratch buffer, so a header table that fits amqplib fits here.
 */
const SCRATCH = Buffer.allocUnsafe(65536)

/** A short string (length byte, then UTF-8) at `offset`; -1 when it is over 255 bytes. */
function shortString(buffer: Buffer, text: unknown, offset: number): number {
  if (typeof text !== 'string') return -1
  const n = text.length
  let len: number
  if (n <= 24) {
    len = n
    for (let i = 0; i < n; i++) {
      const c = text.charCodeAt(i)
      if (c > 0x7f) {
        len = buffer.write(text, offset + 1, 'utf8')
        break
      }
      buffer[offset + 1 + i] = c
    }
  } else {
    if (n > 255) return -1 // every UTF-16 unit is at least one byte
    len = buffer.write(text, offset + 1, 'utf8')
  }
  if (len > 255) return -1
  buffer[offset] = len
  return 1 + len
}

function isOctet(value: number | undefined): boolean {
  return value === undefined || (Number.isInteger(value) && value >= 0 && value <= 255)
}

/** The frames of `fields` and `body` on channel `channel`, as one buffer; undefined when amqplib must do it. */
export function encodePublishFrames(channel: number, fields: PublishFields, body: Buffer): Buffer | undefined {
  if (!Buffer.isBuffer(body) || !isOctet(fields.deliveryMode) || !isOctet(fields.priority)) return undefined
  if (fields.headers !== undefined && (fields.headers === null || typeof fields.headers !== 'object')) return undefined
  const b = SCRATCH
  let n: number

  // basic.publish
  b[0] = FRAME_METHOD
  b.writeUInt16BE(channel, 1)
  b.writeUInt32BE(BASIC_PUBLISH, 7)
  b.writeUInt16BE(0, 11) // ticket
  let o = 13
  if ((n = shortString(b, fields.exchange, o)) < 0) return undefined
  o += n
  if ((n = shortString(b, fields.routingKey, o)) < 0) return undefined
  o += n
  b[o++] = (fields.mandatory ? 1 : 0) | (fields.immediate ? 2 : 0)
  b[o] = FRAME_END
  b.writeUInt32BE(o - 7, 3)
  o += 1

  // The content header.
  const header = o
  b[header] = FRAME_HEADER
  b.writeUInt16BE(channel, header + 1)
  b.writeUInt32BE(BASIC_HEADER, header + 7)
  b.writeUInt32BE(0, header + 11) // body size, high 32 bits: the body is under 2 KB here
  b.writeUInt32BE(body.length, header + 15)
  o = header + 21
  let flags = 0
  if (fields.contentType !== undefined) {
    if ((n = shortString(b, fields.contentType, o)) < 0) return undefined
    o += n
    flags |= F_CONTENT_TYPE
  }
  if (fields.contentEncoding !== undefined) {
    if ((n = shortString(b, fields.contentEncoding, o)) < 0) return undefined
    o += n
    flags |= F_CONTENT_ENCODING
  }
  if (fields.headers !== undefined) {
    try {
      o += encodeTable(b, fields.headers, o)
    } catch {
      // amqplib encodes it again, with more room, and throws its own error if it is one.
      return undefined
    }
    flags |= F_HEADERS
  }
  if (fields.deliveryMode !== undefined) {
    b[o++] = fields.deliveryMode
    flags |= F_DELIVERY_MODE
  }
  if (fields.priority !== undefined) {
    b[o++] = fields.priority
    flags |= F_PRIORITY
  }
  if (fields.correlationId !== undefined) {
    if ((n = shortString(b, fields.correlationId, o)) < 0) return undefined
    o += n
    flags |= F_CORRELATION_ID
  }
  if (fields.replyTo !== undefined) {
    if ((n = shortString(b, fields.replyTo, o)) < 0) return undefined
    o += n
    flags |= F_REPLY_TO
  }
  if (fields.expiration !== undefined) {
    if ((n = shortString(b, fields.expiration, o)) < 0) return undefined
    o += n
    flags |= F_EXPIRATION
  }
  b.writeUInt16BE(flags, header + 19)
  b[o] = FRAME_END
  b.writeUInt32BE(o - header - 7, header + 3)
  o += 1

  // amqplib sends no body frame for an empty body.
  const bodyFrame = body.length > 0 ? body.length + 8 : 0
  const total = o + bodyFrame
  if (total >= SINGLE_CHUNK_THRESHOLD) return undefined
  // allocUnsafe: from Node's pool at this size, and every byte is written below.
  const out = Buffer.allocUnsafe(total)
  b.copy(out, 0, 0, o)
  if (bodyFrame > 0) {
    out[o] = FRAME_BODY
    out.writeUInt16BE(channel, o + 1)
    out.writeUInt32BE(body.length, o + 3)
    body.copy(out, o + 7)
    out[total - 1] = FRAME_END
  }
  return out
}
