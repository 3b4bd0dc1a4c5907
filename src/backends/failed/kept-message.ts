// What tsq keeps of a task message that failed on a tsq worker, so that the
// failed-task inbox can send that very message again: the body's bytes with
// their content type and encoding, the headers and properties, and where it
// was routed. The result backend keeps no body and events only reprs, so
// nothing else can give the arguments back exactly (docs/failed-tasks.md).
import { dumps, loads } from '../../protocol/index.js'
import type { Headers, MessageProperties } from '../../transport/index.js'

export interface KeptMessage {
  taskId: string
  task: string
  /** The worker's hostname (node name). */
  worker: string
  /** When it failed, ISO 8601 UTC. */
  failedAt: string
  /** The exception's class name (`ValueError`) and its repr (`ValueError('boom')`). */
  excType: string
  exception: string
  body: Buffer
  properties: MessageProperties
  exchange: string
  routingKey: string
  /** The queue it was consumed from. */
  queue: string
}

/** How long a kept message lives (result_expires' default, one day), and how many a store keeps at most. */
export const KEPT_TTL_SECONDS = 86_400
export const KEPT_MAX = 10_000
/** A body past this is not kept (one line in the worker's log says so): the inbox is no archive of large payloads. */
export const KEPT_MAX_BODY_BYTES = 4 * 1024 * 1024

/** As JSON text: the body base64, headers through kombu's JSON (an int past 2^53 stays exact). */
export function encodeKeptMessage(m: KeptMessage): string {
  const p = m.properties
  return dumps({
    v: 1,
    task_id: m.taskId,
    task: m.task,
    worker: m.worker,
    failed_at: m.failedAt,
    exc_type: m.excType,
    exception: m.exception,
    body: m.body.toString('base64'),
    content_type: p.contentType,
    content_encoding: p.contentEncoding,
    headers: p.headers,
    delivery_mode: p.deliveryMode,
    priority: p.priority,
    correlation_id: p.correlationId ?? null,
    reply_to: p.replyTo ?? null,
    expiration: p.expiration ?? null,
    app_id: p.appId ?? null,
    exchange: m.exchange,
    routing_key: m.routingKey,
    queue: m.queue,
  })
}

export function decodeKeptMessage(text: string): KeptMessage {
  const r = loads(text, { integers: 'exact' }) as Record<string, unknown>
  if (!r || r.v !== 1 || typeof r.task_id !== 'string' || typeof r.body !== 'string') throw new Error('not a kept task message')
  const str = (v: unknown) => (typeof v === 'string' ? v : '')
  const properties: MessageProperties = {
    contentType: str(r.content_type),
    contentEncoding: str(r.content_encoding),
    headers: (r.headers && typeof r.headers === 'object' ? r.headers : {}) as Headers,
    deliveryMode: r.delivery_mode === 1 ? 1 : 2,
    priority: typeof r.priority === 'number' ? r.priority : 0,
  }
  if (typeof r.correlation_id === 'string') properties.correlationId = r.correlation_id
  if (typeof r.reply_to === 'string') properties.replyTo = r.reply_to
  if (typeof r.expiration === 'string') properties.expiration = r.expiration
  if (typeof r.app_id === 'string') properties.appId = r.app_id
  return {
    taskId: r.task_id,
    task: str(r.task),
    worker: str(r.worker),
    failedAt: str(r.failed_at),
    excType: str(r.exc_type),
    exception: str(r.exception),
    body: Buffer.from(r.body, 'base64'),
    properties,
    exchange: str(r.exchange),
    routingKey: str(r.routing_key),
    queue: str(r.queue),
  }
}
