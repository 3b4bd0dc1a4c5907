// How the AMQP transport puts a message on a channel: amqplib's own publish, or
// the direct publish of tricks/direct-publish.ts unless TSQ_NO_DIRECT_PUBLISH
// (or TSQ_NO_TRICKS) is set or amqplib is not the version it was written for.
import type { Channel, ConfirmChannel } from 'amqplib'
import type { MessageProperties } from '../transport.js'
import { trickOn } from '../../tricks/index.js'
import { amqplibAsMeasured } from './tricks/amqplib-pin.js'
import { directPublisher } from './tricks/direct-publish.js'

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

export interface Publisher {
  /** ConfirmChannel.publish: `cb` hears the broker's ack (null) or nack, or the channel's loss. */
  confirmed(channel: ConfirmChannel, fields: PublishFields, body: Buffer, cb: (err: unknown) => void): void
  /** Channel.publish, unconfirmed. */
  unconfirmed(channel: Channel, fields: PublishFields, body: Buffer): void
}

/** amqplib's public publish, which reads the fields object as its options. */
export const plainPublisher: Publisher = {
  confirmed(channel, fields, body, cb) {
    channel.publish(fields.exchange, fields.routingKey, body, fields, cb)
  },
  unconfirmed(channel, fields, body) {
    channel.publish(fields.exchange, fields.routingKey, body, fields)
  },
}

/** The publisher the switches and amqplib's version allow; chosen once per transport. */
export function choosePublisher(env: NodeJS.ProcessEnv = process.env): Publisher {
  if (!trickOn('directPublish', env) || !amqplibAsMeasured()) return plainPublisher
  return directPublisher({ frames: trickOn('publishFrames', env) })
}
