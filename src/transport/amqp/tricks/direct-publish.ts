// A publish that hands amqplib's channel the task's own header table: amqplib's
// `publish` wraps it in `Object.create(headers)`, which turns each task's fresh
// table into a V8 prototype and its encoding into a slow path (bench/README.md#tricks).
// The fields are what Args.publish would build; the confirm callback is queued
// as ConfirmChannel.publish queues it. Where amqplib's internals are missing,
// or the channel is closing, amqplib's own publish or sendMessage runs.
// Switches: TSQ_NO_DIRECT_PUBLISH, and TSQ_NO_PUBLISH_FRAMES for the frames.
import type { ConfirmChannel } from 'amqplib'
import type { Publisher, PublishFields } from '../publish.js'
import { encodePublishFrames } from './publish-frames.js'

/** The amqplib internals this touches (lib/channel.js, lib/connection.js); amqplib-pin.ts checks they are there. */
interface ChannelInternals {
  ch?: number
  connection?: {
    channels?: Array<{ channel: unknown; buffer?: { write?: (frames: Buffer) => boolean } } | null>
    sentSinceLastCheck?: boolean
  }
  pushConfirmCallback?: (cb: (err: unknown) => void) => void
  sendMessage?: (fields: PublishFields, properties: PublishFields, content: Buffer) => boolean
}

type FrameStream = { write: (frames: Buffer) => boolean }

/**
 * The channel's own frame stream while it is open, as Connection#sendMessage
 * finds it; undefined once the stream is another channel's (freed on close) or
 * the channel is closing (amqplib then sets a throwing sendMessage on it).
 */
function frameStream(ch: ChannelInternals): FrameStream | undefined {
  if (Object.prototype.hasOwnProperty.call(ch, 'sendMessage') || typeof ch.ch !== 'number') return undefined
  const entry = ch.connection?.channels?.[ch.ch]
  const stream = entry?.buffer
  return entry?.channel === ch && typeof stream?.write === 'function' ? (stream as FrameStream) : undefined
}

/** Writes the message on the channel, by its own frames where it can. */
function send(
  ch: ChannelInternals,
  fields: PublishFields,
  body: Buffer,
  stream: FrameStream | undefined,
  frames: Buffer | undefined,
): void {
  if (stream && frames) {
    ch.connection!.sentSinceLastCheck = true
    stream.write(frames)
  } else ch.sendMessage!(fields, fields, body)
}

/** The direct publisher; `frames`: write messages under amqplib's single-chunk threshold as tsq's own frames (publish-frames.ts). */
export function directPublisher(options: { frames: boolean }): Publisher {
  const framing = options.frames
  return {
    confirmed(channel, fields, body, cb) {
      const ch = channel as unknown as ChannelInternals
      if (typeof ch.pushConfirmCallback === 'function' && typeof ch.sendMessage === 'function') {
        const stream = framing ? frameStream(ch) : undefined
        const frames = stream ? encodePublishFrames(ch.ch!, fields, body) : undefined
        ch.pushConfirmCallback(cb)
        send(ch, fields, body, stream, frames)
        return
      }
      ;(channel as ConfirmChannel).publish(fields.exchange, fields.routingKey, body, fields, cb)
    },
    unconfirmed(channel, fields, body) {
      const ch = channel as unknown as ChannelInternals
      if (typeof ch.sendMessage === 'function') {
        const stream = framing ? frameStream(ch) : undefined
        send(ch, fields, body, stream, stream ? encodePublishFrames(ch.ch!, fields, body) : undefined)
        return
      }
      channel.publish(fields.exchange, fields.routingKey, body, fields)
    },
  }
}
