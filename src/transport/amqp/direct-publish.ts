// A publish that hands amqplib the message's own header table.
//
// amqplib's publish (lib/api_args.js, Args.publish) wraps the headers as
// `Object.create(options.headers)`, a fresh object whose prototype is the
// caller's table, so it can add CC and BCC without touching it. When the
// table is new on every publish, as each task's headers are, V8 turns every
// one of them into a prototype (a map of its own), and the codec's for-in
// over the wrapper takes the slow path through the prototype chain: ~10 µs
// of CPU per send on a 2-CPU machine, a third of tsq's producer cost, where
// a publish re-using one table (the raw amqplib peer of bench/producer.ts)
// pays it once. tsq sends no CC or BCC, so the wrapper buys nothing here.
//
// So the fields object Args.publish would return is built here, in the same
// shape, and given to the channel's sendMessage, after the confirm callback
// is queued as ConfirmChannel.publish queues it. Both are amqplib internals
// (lib/channel.js and lib/channel_model.js since 0.5); where either is
// missing, the ordinary publish runs instead, which reads the same object as
// its options.
//
// A message under amqplib's single-chunk threshold skips sendMessage too: its
// frames are written here (publish-frames.ts says why) and put on the
// channel's frame stream, as Connection#sendMessage puts them, while that
// stream is still this channel's (connection.channels[ch], freed on close)
// and the channel is not closing (amqplib then replaces sendMessage on the
// channel itself, with one that throws).
import type { Channel, ConfirmChannel } from 'amqplib'
import type { MessageProperties } from '../transport.js'
import { encodePublishFrames } from './publish-frames.js'

/** Args.publish's result: basic.publish's method fields and the message's properties, in one object. */
export interface PublishFields {
  exchange: string
  routingKey: string
  mandatory: boolean
  immediate: boolean
  ticket: undefined
  contentType: string | undefined
  contentEncoding: string | undefined
  headers: Record<string, unknown> | undefined
  deliveryMode: number | undefined
  priority: number | undefined
  correlationId: string | undefined
  replyTo: string | undefined
  expiration: string | undefined
  messageId: undefined
  timestamp: undefined
  type: undefined
  userId: undefined
  appId: undefined
  clusterId: undefined
}

interface ChannelInternals {
  ch?: number
  connection?: { channels?: Array<{ channel: unknown; buffer?: { write?: (frames: Buffer) => boolean } } | null>; sentSinceLastCheck?: boolean }
  pushConfirmCallback?: (cb: (err: unknown) => void) => void
  sendMessage?: (fields: PublishFields, properties: PublishFields, content: Buffer) => boolean
}

/** The channel's own frame stream while it is open, as Connection#sendMessage finds it; else undefined. */
function frameStream(ch: ChannelInternals): { write: (frames: Buffer) => boolean } | undefined {
  if (Object.prototype.hasOwnProperty.call(ch, 'sendMessage') || typeof ch.ch !== 'number') return undefined
  const entry = ch.connection?.channels?.[ch.ch]
  const stream = entry?.buffer
  return entry?.channel === ch && typeof stream?.write === 'function' ? (stream as { write: (frames: Buffer) => boolean }) : undefined
}

/** Writes the message on the channel, by its own frames where it can. */
function send(ch: ChannelInternals, fields: PublishFields, body: Buffer, stream: { write: (frames: Buffer) => boolean } | undefined, frames: Buffer | undefined): void {
  if (stream && frames) {
    ch.connection!.sentSinceLastCheck = true
    stream.write(frames)
  } else ch.sendMessage!(fields, fields, body)
}

/** The fields of one publish; every property is always present, so all share one hidden class. */
export function publishFields(exchange: string, routingKey: string, props: MessageProperties): PublishFields {
  return {
    exchange,
    routingKey,
    mandatory: false,
    immediate: false,
    ticket: undefined,
    contentType: props.contentType,
    contentEncoding: props.contentEncoding,
    headers: props.headers,
    deliveryMode: props.deliveryMode,
    priority: props.priority,
    correlationId: props.correlationId,
    replyTo: props.replyTo,
    expiration: props.expiration,
    messageId: undefined,
    timestamp: undefined,
    type: undefined,
    userId: undefined,
    appId: undefined,
    clusterId: undefined,
  }
}

/** ConfirmChannel.publish: `cb` hears the broker's ack (null) or nack, or the channel's loss. */
export function publishConfirmed(channel: ConfirmChannel, fields: PublishFields, body: Buffer, cb: (err: unknown) => void): void {
  const ch = channel as unknown as ChannelInternals
  if (typeof ch.pushConfirmCallback === 'function' && typeof ch.sendMessage === 'function') {
    const stream = frameStream(ch)
    const frames = stream ? encodePublishFrames(ch.ch!, fields, body) : undefined
    ch.pushConfirmCallback(cb)
    send(ch, fields, body, stream, frames)
    return
  }
  channel.publish(fields.exchange, fields.routingKey, body, fields, cb)
}

/** Channel.publish, unconfirmed. */
export function publishUnconfirmed(channel: Channel, fields: PublishFields, body: Buffer): void {
  const ch = channel as unknown as ChannelInternals
  if (typeof ch.sendMessage === 'function') {
    const stream = frameStream(ch)
    send(ch, fields, body, stream, stream ? encodePublishFrames(ch.ch!, fields, body) : undefined)
    return
  }
  channel.publish(fields.exchange, fields.routingKey, body, fields)
}
