// kombu's JSON envelope (spec §4.2): what Redis LPUSHes and PUBLISHes, and what
// the file broker stores. Keys are written in kombu's order so a captured Python
// message and ours compare equal.
import { setOptionalProperties, type HeaderValue, type Headers, type MessageProperties, type OutgoingMessage } from './transport.js'
import { codedError, dumps, loads, quoteJsonString, uuid4 } from '../protocol/index.js'
import { TsqTransportError } from './errors.js'

export interface DeliveryInfo {
  exchange: string
  routing_key: string
  redelivered?: boolean
  [key: string]: unknown
}

export interface EnvelopeProperties {
  correlation_id?: string
  reply_to?: string
  delivery_mode?: number
  expiration?: string
  delivery_info: DeliveryInfo
  priority?: number
  body_encoding?: string | null
  delivery_tag: string
  [key: string]: unknown
}

export interface KombuEnvelope {
  body: string | null
  'content-encoding': string | null
  'content-type': string | null
  headers: Headers
  properties: EnvelopeProperties
}

/** A stored or pushed message that is not kombu's envelope (not JSON, no properties). */
export class MalformedEnvelopeError extends codedError('MALFORMED_ENVELOPE', TsqTransportError) {}

export function buildEnvelope(exchange: string, routingKey: string, message: OutgoingMessage): KombuEnvelope {
  const p = message.properties
  const properties: EnvelopeProperties = {
    ...(p.correlationId !== undefined ? { correlation_id: p.correlationId } : {}),
    ...(p.replyTo !== undefined ? { reply_to: p.replyTo } : {}),
    delivery_mode: p.deliveryMode,
    ...(p.expiration !== undefined ? { expiration: p.expiration } : {}),
    delivery_info: { exchange, routing_key: routingKey },
    priority: p.priority,
    body_encoding: 'base64',
    delivery_tag: uuid4(),
  }
  return {
    body: message.body.toString('base64'),
    'content-encoding': p.contentEncoding,
    'content-type': p.contentType,
    headers: p.headers,
    properties,
  }
}

export function serializeEnvelope(envelope: KombuEnvelope): string {
  return dumps(envelope as unknown as HeaderValue)
}

function member(name: string, value: unknown): string {
  if (value === undefined) return ''
  return `"${name}": ${typeof value === 'string' ? quoteJsonString(value) : dumps(value)}, `
}

/**
 * `serializeEnvelope(buildEnvelope(...))` written straight to text, the same
 * bytes: every Redis send makes one, and building the envelope object only to
 * walk it again (its spreads, its properties, the body's base64 as a member)
 * was a visible share of a send's CPU.
 */
export function encodeEnvelope(exchange: string, routingKey: string, message: OutgoingMessage): string {
  const p = message.properties
  const properties =
    `{${member('correlation_id', p.correlationId)}${member('reply_to', p.replyTo)}${member('delivery_mode', p.deliveryMode)}${member('expiration', p.expiration)}` +
    `"delivery_info": {"exchange": ${quoteJsonString(exchange)}, "routing_key": ${quoteJsonString(routingKey)}}, ` +
    `${member('priority', p.priority)}"body_encoding": "base64", "delivery_tag": "${uuid4()}"}`
  return `{"body": "${message.body.toString('base64')}", ${member('content-encoding', p.contentEncoding)}${member('content-type', p.contentType)}${member('headers', p.headers)}"properties": ${properties}}`
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

export function parseEnvelope(raw: string): KombuEnvelope {
  let value: unknown
  try {
    value = loads(raw)
  } catch (error) {
    throw new MalformedEnvelopeError(`not JSON: ${raw.slice(0, 120)}`, { cause: error })
  }
  return asEnvelope(value, raw)
}

export function asEnvelope(value: unknown, raw = ''): KombuEnvelope {
  if (!isObject(value) || !isObject(value.properties)) {
    throw new MalformedEnvelopeError(`not a kombu envelope: ${raw.slice(0, 120)}`)
  }
  const props = value.properties
  if (typeof props.delivery_tag !== 'string') props.delivery_tag = uuid4()
  if (!isObject(props.delivery_info)) props.delivery_info = { exchange: '', routing_key: '' }
  return value as unknown as KombuEnvelope
}

export function envelopeBody(envelope: KombuEnvelope): Buffer {
  const body = envelope.body
  if (body === null || body === undefined || body === '') return Buffer.alloc(0)
  if (typeof body !== 'string') return Buffer.from(dumps(body as HeaderValue), 'utf8')
  return envelope.properties.body_encoding === 'base64' ? Buffer.from(body, 'base64') : Buffer.from(body, 'utf8')
}

export function envelopeProperties(envelope: KombuEnvelope): MessageProperties {
  const p = envelope.properties
  const props: MessageProperties = {
    contentType: envelope['content-type'] ?? '',
    contentEncoding: envelope['content-encoding'] ?? '',
    headers: isObject(envelope.headers) ? envelope.headers : {},
    deliveryMode: p.delivery_mode === 1 ? 1 : 2,
    priority: typeof p.priority === 'number' ? p.priority : 0,
  }
  return setOptionalProperties(props, { correlationId: p.correlation_id, replyTo: p.reply_to, appId: p.app_id, expiration: p.expiration })
}

/** A stored envelope read back: the message, and the exchange and routing key it was published with. */
export interface DecodedMessage {
  body: Buffer
  properties: MessageProperties
  exchange: string
  routingKey: string
}

/** Reads a stored envelope (a file broker's message, a parked message); MalformedEnvelopeError if it is none. */
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

/** kombu `_do_restore_message`: both flags, or neither when headers are missing. */
export function markRedelivered(envelope: KombuEnvelope): void {
  if (!isObject(envelope.headers) || !isObject(envelope.properties.delivery_info)) return
  envelope.headers.redelivered = true
  envelope.properties.delivery_info.redelivered = true
}
