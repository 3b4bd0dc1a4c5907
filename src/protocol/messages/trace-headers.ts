// The trace context a task message carries, as opentelemetry-instrumentation-celery
// writes it: W3C `traceparent`, `tracestate` and `baggage` as top-level protocol-2
// headers (Python's default propagators, tracecontext and baggage), and the span
// attributes that instrumentation sets on its `apply_async/<task>` and `run/<task>`
// spans. Pure: the OpenTelemetry API is used in src/tracing/ only.
import { pyRepr } from '../codecs/python-repr.js'

export const TRACEPARENT = 'traceparent'
export const TRACESTATE = 'tracestate'
export const BAGGAGE = 'baggage'
/**
 * tsq's own header, written beside the trace context only when a send is traced:
 * when the message was sent (Unix seconds), for the queue-wait figure. Celery puts
 * an unknown header on `task.request` and nothing more.
 */
export const SENT_AT = 'tsq_sent_at'

export interface TraceParent {
  traceId: string
  spanId: string
  traceFlags: number
}

const TRACEPARENT_RE = /^\s*([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?\s*$/
const ZERO_TRACE = '0'.repeat(32)
const ZERO_SPAN = '0'.repeat(16)

/** `00-<trace id>-<span id>-<flags>`, the one version W3C defines. */
export function formatTraceparent(tp: TraceParent): string {
  return `00-${tp.traceId}-${tp.spanId}-${(tp.traceFlags & 0xff).toString(16).padStart(2, '0')}`
}

/**
 * A `traceparent` header read as Python's TraceContextTextMapPropagator reads it:
 * version ff, an all-zero id, or a version 00 header with more fields is no context.
 */
export function parseTraceparent(value: unknown): TraceParent | null {
  if (typeof value !== 'string') return null
  const m = TRACEPARENT_RE.exec(value)
  if (!m) return null
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string | undefined]
  if (version === 'ff') return null
  if (version === '00' && rest) return null
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null
  return { traceId, spanId, traceFlags: parseInt(flags, 16) }
}

export interface BaggageItem {
  key: string
  value: string
  metadata?: string
}

// Python's W3CBaggagePropagator limits: past them the rest is dropped.
const MAX_BAGGAGE_HEADER = 8192
const MAX_BAGGAGE_PAIRS = 180
const MAX_BAGGAGE_PAIR = 4096

/** Python writes quote_plus (a space as `+`) and reads unquote_plus; JavaScript's propagator writes %20. Both read here. */
function unquotePlus(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '))
  } catch {
    return text
  }
}

/** The `baggage` header's entries, or [] for a header too long or none. */
export function parseBaggage(value: unknown): BaggageItem[] {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_BAGGAGE_HEADER) return []
  const items: BaggageItem[] = []
  for (const entry of value.split(',')) {
    if (items.length >= MAX_BAGGAGE_PAIRS) break
    if (entry.length > MAX_BAGGAGE_PAIR) continue
    const [pair, ...props] = entry.split(';')
    const eq = pair!.indexOf('=')
    if (eq <= 0) continue
    const key = unquotePlus(pair!.slice(0, eq)).trim()
    const val = unquotePlus(pair!.slice(eq + 1)).trim()
    if (!key) continue
    const item: BaggageItem = { key, value: val }
    if (props.length > 0) item.metadata = props.join(';').trim()
    items.push(item)
  }
  return items
}

/** The `baggage` header for `items`, percent-encoded; undefined when there are none (no header, as Python writes none). */
export function formatBaggage(items: readonly BaggageItem[]): string | undefined {
  if (items.length === 0) return undefined
  return items.map((i) => `${encodeURIComponent(i.key)}=${encodeURIComponent(i.value)}${i.metadata ? `;${i.metadata}` : ''}`).join(',')
}

// The attribute names of opentelemetry-instrumentation-celery (its semconv: the
// pre-1.0 messaging names it still writes).
export const ATTR = {
  action: 'celery.action',
  taskName: 'celery.task_name',
  messageId: 'messaging.message.id',
  destination: 'messaging.destination',
  destinationKind: 'messaging.destination_kind',
  conversationId: 'messaging.conversation_id',
  retryReason: 'celery.retry.reason',
  /** tsq's own: seconds from the send (or the ETA, when later) to the run's start. */
  queueWait: 'tsq.task.queue_wait',
} as const

export type TraceAttributes = Record<string, string | number | boolean | string[] | number[]>

/** The span names: `apply_async/<task>` for a send, `run/<task>` for a run. */
export const producerSpanName = (task: string): string => `apply_async/${task}`
export const consumerSpanName = (task: string): string => `run/${task}`

/**
 * What the instrumentation sets on `apply_async/<task>` from before_task_publish's
 * arguments: the action, id and name, then `declare` (the queue's exchange type:
 * `queue` for direct, `topic` for topic; others it cannot write), `exchange` (none
 * for the default exchange) and `routing_key`.
 */
export function producerAttributes(send: {
  taskId: string
  taskName: string
  exchange: string
  routingKey: string
  /** The type of the declared queue's exchange; undefined when the send declares none. */
  exchangeType?: string
}): TraceAttributes {
  const attrs: TraceAttributes = {
    [ATTR.action]: 'apply_async',
    [ATTR.messageId]: send.taskId,
    [ATTR.taskName]: send.taskName,
  }
  if (send.exchangeType === 'direct') attrs[ATTR.destinationKind] = 'queue'
  else if (send.exchangeType === 'topic') attrs[ATTR.destinationKind] = 'topic'
  if (send.exchange) attrs['celery.exchange'] = send.exchange
  if (send.routingKey) attrs[ATTR.destination] = send.routingKey
  return attrs
}

/** What a run's request holds of Celery's `task.request`, for the run span. */
export interface RunRequest {
  id: string
  taskName: string
  /** The worker's node name (request.hostname); the sender's `origin` replaces it, as in Python. */
  hostname: string
  origin?: string | null
  correlationId?: string | null
  deliveryInfo?: { exchange: string; routingKey: string; priority: number | null; redelivered: boolean | null } | null
  eta?: string | null
  expires?: string | null
  replyTo?: string | null
  retries: number
}

/**
 * What the instrumentation sets on `run/<task>` at task_postrun: the action,
 * the postrun `state`, then set_attributes_from_context over `task.request` in
 * its order (correlation_id, delivery_info with its routing key, eta, expires,
 * hostname, id, reply_to, retries unless 0, origin as hostname), then the name.
 */
export function consumerAttributes(run: RunRequest, state: string): TraceAttributes {
  const attrs: TraceAttributes = { [ATTR.action]: 'run', 'celery.state': state }
  if (run.correlationId) attrs[ATTR.conversationId] = run.correlationId
  const d = run.deliveryInfo
  if (d) {
    if (d.routingKey !== undefined && d.routingKey !== null) attrs[ATTR.destination] = d.routingKey
    // str() of Celery's Request.delivery_info dict.
    attrs['celery.delivery_info'] = pyRepr({
      exchange: d.exchange,
      routing_key: d.routingKey,
      priority: d.priority,
      redelivered: d.redelivered,
    })
  }
  if (run.eta) attrs['celery.eta'] = run.eta
  if (run.expires) attrs['celery.expires'] = run.expires
  if (run.hostname) attrs['celery.hostname'] = run.hostname
  attrs[ATTR.messageId] = run.id
  if (run.replyTo) attrs['celery.reply_to'] = run.replyTo
  if (run.retries) attrs['celery.retries'] = run.retries
  if (run.origin) attrs['celery.hostname'] = run.origin
  attrs[ATTR.taskName] = run.taskName
  return attrs
}

/** The `tsq_sent_at` header's value for now. */
export const sentAtNow = (nowMs: number): number => Math.round(nowMs) / 1000

/**
 * Seconds between when the message was due (sent, or its ETA when that is later)
 * and `startedMs`; null when the message does not say when it was sent.
 */
export function queueWaitSeconds(sentAt: unknown, eta: string | null | undefined, startedMs: number): number | null {
  if (typeof sentAt !== 'number' || !Number.isFinite(sentAt)) return null
  let dueMs = sentAt * 1000
  if (eta) {
    const etaMs = Date.parse(eta)
    if (Number.isFinite(etaMs) && etaMs > dueMs) dueMs = etaMs
  }
  return Math.max(0, (startedMs - dueMs) / 1000)
}
