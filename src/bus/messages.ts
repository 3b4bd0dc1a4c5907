// The messages the bus sends again: a failed event to a retry step or to the
// archive, and an archived one back to its handler queue. Each stays an
// ordinary Celery task message (protocol v2) with the same id, args and
// kwargs, so a Python worker of the same service takes it as its own, and
// `tsq archive` reads a Python service's archive. The failure notes tsq adds
// are headers Celery ignores. Pure, no I/O.
import { decodeTaskMessage, encodeTaskV2, exceptionRepr, formatIsoDate, type TaskRequest } from '../protocol/index.js'
import type { Headers, HeaderValue, MessageProperties, OutgoingMessage } from '../transport/index.js'
import type { TaskRun } from '../app/index.js'

/** When the event first failed (ISO 8601), kept across its retries. */
export const FIRST_FAILURE_HEADER = 'x-tsq-first-failure'
/** The last failure, as Python shows an exception: `ValueError('no id')`. */
export const LAST_ERROR_HEADER = 'x-tsq-last-error'
/** The last failure's stack (at most TRACEBACK_MAX characters). */
export const LAST_TRACEBACK_HEADER = 'x-tsq-last-traceback'
/** When the event went to the archive (ISO 8601), and why. */
export const ARCHIVED_AT_HEADER = 'x-tsq-archived-at'
export const ARCHIVE_REASON_HEADER = 'x-tsq-archive-reason'
/** When `tsq archive replay` sent it back. */
export const REPLAYED_AT_HEADER = 'x-tsq-replayed-at'

/** Header tables travel in one AMQP frame (128 KiB by default): a stack is cut to this. */
export const TRACEBACK_MAX = 8000

export interface FailureNote {
  /** `ValueError('no id')` */
  error: string
  traceback: string | null
  at: Date
}

export interface Resend {
  /** The retries header of the message sent (the library's request.retries + 1). */
  retries: number
  /** Not before this time (Celery's retry countdown); null: none. */
  eta: Date | null
  /** The node that sends it (Celery stamps the retrying worker's). */
  origin?: string
  failure?: FailureNote
  archived?: { at: Date; reason: string }
  /** A replay: the failure notes go, the replay time is noted. */
  replayedAt?: Date
}

/** The record a broker adds when it dead-letters a message belongs to that broker's hop, not to a resend. */
export function isBrokerHeader(key: string): boolean {
  return key === 'x-death' || key.startsWith('x-first-death-') || key.startsWith('x-last-death-') || key === 'redelivered'
}

function isNoteHeader(key: string): boolean {
  return key.startsWith('x-tsq-')
}

/** A JavaScript error as Python's repr shows an exception: `TypeError('boom')`. */
export function errorRepr(error: unknown): string {
  if (error instanceof Error || (typeof error === 'object' && error !== null && 'message' in error)) {
    const e = error as { name?: unknown; message?: unknown; constructor?: { name?: string } }
    const type = typeof e.name === 'string' && e.name !== '' ? e.name : e.constructor?.name || 'Error'
    return exceptionRepr({ exc_type: type, exc_message: [String(e.message ?? '')], exc_module: 'builtins' })
  }
  return exceptionRepr({ exc_type: 'Exception', exc_message: [String(error)], exc_module: 'builtins' })
}

export function failureNote(error: unknown, at = new Date()): FailureNote {
  const stack = error instanceof Error && typeof error.stack === 'string' ? error.stack : null
  return { error: errorRepr(error), traceback: stack && stack.length > TRACEBACK_MAX ? `${stack.slice(0, TRACEBACK_MAX)}\n…` : stack, at }
}

/** The headers of a resend: the sender's own kept, the broker's record and stale notes dropped, the change applied. */
function resendHeaders(old: Headers, change: Resend): Headers {
  const headers: Headers = {}
  for (const [key, value] of Object.entries(old)) {
    if (isBrokerHeader(key)) continue
    if (change.replayedAt && isNoteHeader(key)) continue
    headers[key] = value
  }
  headers.retries = change.retries
  headers.eta = change.eta ? formatIsoDate(change.eta) : null
  if (change.origin) headers.origin = change.origin
  if (change.failure) {
    if (typeof headers[FIRST_FAILURE_HEADER] !== 'string') headers[FIRST_FAILURE_HEADER] = formatIsoDate(change.failure.at)
    headers[LAST_ERROR_HEADER] = change.failure.error
    if (change.failure.traceback) headers[LAST_TRACEBACK_HEADER] = change.failure.traceback
    else delete headers[LAST_TRACEBACK_HEADER]
  }
  if (change.archived) {
    headers[ARCHIVED_AT_HEADER] = formatIsoDate(change.archived.at)
    headers[ARCHIVE_REASON_HEADER] = change.archived.reason
  }
  if (change.replayedAt) headers[REPLAYED_AT_HEADER] = formatIsoDate(change.replayedAt)
  return headers
}

function sendProperties(props: MessageProperties, headers: Headers): MessageProperties {
  const out: MessageProperties = {
    contentType: props.contentType,
    contentEncoding: props.contentEncoding,
    headers,
    deliveryMode: 2,
    priority: props.priority,
  }
  if (props.correlationId !== undefined) out.correlationId = props.correlationId
  if (props.replyTo !== undefined) out.replyTo = props.replyTo
  return out
}

/**
 * A received message sent again with `change`: for protocol v2 the body goes
 * out byte for byte (the handler sees exactly what was fired, a Python
 * `9.0` included) and only headers change; a v1 message is re-encoded as v2.
 * Throws when the message is not a task message at all.
 */
export function resendFromMessage(message: { body: Buffer; properties: MessageProperties }, change: Resend): OutgoingMessage {
  const headers = message.properties.headers ?? {}
  if (typeof headers.task === 'string' && typeof headers.id === 'string') {
    return { body: message.body, properties: sendProperties(message.properties, resendHeaders(headers, change)) }
  }
  const request = decodeTaskMessage({
    headers,
    body: message.body,
    contentType: message.properties.contentType,
    contentEncoding: message.properties.contentEncoding,
  })
  return resendFromRequest(request, message.properties, change)
}

function resendFromRequest(m: TaskRequest, props: MessageProperties, change: Resend): OutgoingMessage {
  const custom: Headers = {}
  for (const [key, value] of Object.entries(props.headers ?? {})) if (!(key in m.headers)) custom[key] = value
  const encoded = encodeTaskV2(m.task, {
    id: m.id,
    args: m.args,
    kwargs: m.kwargs,
    embed: m.embed,
    expires: m.expires ?? undefined,
    timeLimit: m.timelimit[0],
    softTimeLimit: m.timelimit[1],
    retries: change.retries,
    rootId: m.rootId,
    parentId: m.parentId,
    group: m.group,
    groupIndex: m.groupIndex,
    shadow: m.shadow,
    origin: change.origin ?? m.origin ?? '',
    ignoreResult: m.ignoreResult,
    replyTo: props.replyTo,
  })
  const headers = resendHeaders({ ...(encoded.headers as Headers), ...custom }, change)
  return {
    body: Buffer.from(encoded.body, 'utf8'),
    properties: sendProperties(
      { ...props, contentType: encoded.contentType, contentEncoding: encoded.contentEncoding, correlationId: m.id },
      headers,
    ),
  }
}

/** What a handler run knows of its message (a TaskContext is one): the run, and its event's name. */
export type RunContext = TaskRun & { name: string }

/**
 * A failed run's message sent again, built from the run's context (a pool
 * slot has no bytes of its message): the same id, args and kwargs, the
 * sender's own headers, and `change`.
 */
export function resendFromContext(ctx: RunContext, change: Resend): OutgoingMessage {
  const encoded = encodeTaskV2(ctx.name, {
    id: ctx.id,
    args: ctx.args,
    kwargs: ctx.kwargs,
    embed: {
      callbacks: ctx.callbacks ?? null,
      errbacks: ctx.errbacks ?? null,
      chain: ctx.chain ?? null,
      chord: ctx.chord ?? null,
    },
    expires: ctx.expires ?? undefined,
    retries: change.retries,
    rootId: ctx.rootId,
    parentId: ctx.parentId,
    group: ctx.group,
    groupIndex: ctx.groupIndex ?? null,
    origin: change.origin ?? ctx.hostname,
    replyTo: ctx.replyTo ?? '',
  })
  const headers = resendHeaders({ ...(encoded.headers as Headers), ...((ctx.headers ?? {}) as Record<string, HeaderValue>) }, change)
  return {
    body: Buffer.from(encoded.body, 'utf8'),
    properties: {
      contentType: encoded.contentType,
      contentEncoding: encoded.contentEncoding,
      headers,
      deliveryMode: 2,
      priority: 0,
      correlationId: ctx.id,
      replyTo: ctx.replyTo ?? '',
    },
  }
}

/** An archived message, as `tsq archive` shows it. */
export interface ArchivedEvent {
  id: string
  event: string
  service: string
  retries: number | null
  args: unknown
  kwargs: unknown
  firstFailure: string | null
  archivedAt: string | null
  lastError: string | null
  traceback: string | null
  reason: string | null
  /** The node that sent it to the archive (Celery's `origin`). */
  origin: string | null
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null
}

/**
 * Reads an archived message, a Python service's too (which carries none of
 * tsq's notes: its failure fields are null). A message that is not a task
 * message still gets an entry, under its correlation id or `fallbackId`.
 */
export function describeArchived(
  message: { body: Buffer; properties: MessageProperties },
  service: string,
  fallbackId: string,
): ArchivedEvent {
  const h = message.properties.headers ?? {}
  const base = {
    service,
    firstFailure: text(h[FIRST_FAILURE_HEADER]),
    archivedAt: text(h[ARCHIVED_AT_HEADER]),
    lastError: text(h[LAST_ERROR_HEADER]),
    traceback: text(h[LAST_TRACEBACK_HEADER]),
    reason: text(h[ARCHIVE_REASON_HEADER]),
  }
  try {
    const m = decodeTaskMessage({
      headers: h,
      body: message.body,
      contentType: message.properties.contentType,
      contentEncoding: message.properties.contentEncoding,
    })
    return { ...base, id: m.id, event: m.task, retries: m.retries, args: m.args, kwargs: m.kwargs, origin: m.origin }
  } catch {
    const id = text(h.id) ?? text(message.properties.correlationId) ?? fallbackId
    return { ...base, id, event: text(h.task) ?? '?', retries: null, args: null, kwargs: null, origin: text(h.origin) }
  }
}
