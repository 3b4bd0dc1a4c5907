// The stored message: kombu's Redis envelope (spec §4.2), so a message file
// reads like what `redis-cli LRANGE celery 0 -1` shows.
import { buildEnvelope, envelopeBody, envelopeProperties, parseEnvelope, serializeEnvelope } from '../kombu-envelope.js'
import type { MessageProperties, OutgoingMessage } from '../transport.js'

export interface DecodedMessage {
  body: Buffer
  properties: MessageProperties
  exchange: string
  routingKey: string
}

export function encodeEnvelope(exchange: string, routingKey: string, message: OutgoingMessage): string {
  return serializeEnvelope(buildEnvelope(exchange, routingKey, message))
}

export function decodeEnvelope(text: string): DecodedMessage {
  const envelope = parseEnvelope(text)
  const info = envelope.properties.delivery_info
  return {
    body: envelopeBody(envelope),
    properties: envelopeProperties(envelope),
    exchange: typeof info.exchange === 'string' ? info.exchange : '',
    routingKey: typeof info.routing_key === 'string' ? info.routing_key : '',
  }
}

/** Per-message `expiration` (AMQP, ms as a decimal string); undefined when absent or unparsable. */
export function expirationMs(properties: MessageProperties): number | undefined {
  if (properties.expiration === undefined) return undefined
  const ms = Number(properties.expiration)
  return Number.isFinite(ms) && ms >= 0 ? ms : undefined
}
