// The stored message: kombu's Redis envelope (spec §4.2), so a message file
// reads like what `redis-cli LRANGE celery 0 -1` shows.
import { randomUUID } from 'node:crypto'
import type { Headers, MessageProperties, OutgoingMessage } from '../transport.js'

export interface StoredEnvelope {
  body: string
  'content-encoding': string
  'content-type': string
  headers: Headers
  properties: {
    correlation_id?: string
    reply_to?: string
    delivery_mode: 1 | 2
    expiration?: string
    delivery_info: { exchange: string; routing_key: string }
    priority: number
    body_encoding: 'base64'
    delivery_tag: string
  }
}

export interface DecodedMessage {
  body: Buffer
  properties: MessageProperties
  exchange: string
  routingKey: string
}

export function encodeEnvelope(exchange: string, routingKey: string, message: OutgoingMessage): string {
  const p = message.properties
  const properties: StoredEnvelope['properties'] = {
    ...(p.correlationId !== undefined ? { correlation_id: p.correlationId } : {}),
    ...(p.replyTo !== undefined ? { reply_to: p.replyTo } : {}),
    delivery_mode: p.deliveryMode,
    ...(p.expiration !== undefined ? { expiration: p.expiration } : {}),
    delivery_info: { exchange, routing_key: routingKey },
    priority: p.priority,
    body_encoding: 'base64',
    delivery_tag: randomUUID(),
  }
  const envelope: StoredEnvelope = {
    body: message.body.toString('base64'),
    'content-encoding': p.contentEncoding,
    'content-type': p.contentType,
    headers: p.headers,
    properties,
  }
  return JSON.stringify(envelope)
}

export function decodeEnvelope(text: string): DecodedMessage {
  const env = JSON.parse(text) as StoredEnvelope
  const p = env.properties
  const properties: MessageProperties = {
    contentType: env['content-type'],
    contentEncoding: env['content-encoding'],
    headers: env.headers ?? {},
    deliveryMode: p.delivery_mode === 1 ? 1 : 2,
    priority: typeof p.priority === 'number' ? p.priority : 0,
  }
  if (p.correlation_id !== undefined) properties.correlationId = p.correlation_id
  if (p.reply_to !== undefined) properties.replyTo = p.reply_to
  if (p.expiration !== undefined) properties.expiration = p.expiration
  return {
    body: Buffer.from(env.body, 'base64'),
    properties,
    exchange: p.delivery_info?.exchange ?? '',
    routingKey: p.delivery_info?.routing_key ?? '',
  }
}

/** Per-message `expiration` (AMQP, ms as a decimal string); undefined when absent or unparsable. */
export function expirationMs(properties: MessageProperties): number | undefined {
  if (properties.expiration === undefined) return undefined
  const ms = Number(properties.expiration)
  return Number.isFinite(ms) && ms >= 0 ? ms : undefined
}
