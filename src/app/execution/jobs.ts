// The messages between a worker and its pool slots. One discriminated union per
// direction, shared by the prefork (IPC) and threads (MessagePort) pools.

import type { Signature } from '../../protocol/index.js'
import type { TaskRun } from '../task-context.js'

export interface Job extends TaskRun {
  task: string
  /** Seconds; the slot fires the task's AbortSignal when it passes. */
  softTimeLimit: number | null
}

export interface EncodedException {
  type: string
  /** The exception's args as Celery stores them (exc_message). */
  args: unknown[]
  module: string
  message: string
  /** The JavaScript error's name where `type` is another (a plain `Error` travels as Python's Exception). */
  jsName?: string
}

export type Outcome = (
  | { status: 'success'; value: unknown; runtime: number }
  | { status: 'failure'; exc: EncodedException; traceback: string | null; runtime: number }
  | {
      status: 'retry'
      countdown: number | null
      eta: string | null
      maxRetries: number | null
      exc: EncodedException | null
      runtime: number
    }
  | { status: 'killed'; reason: 'time-limit' | 'terminated' | 'worker-lost'; signal: string | null; runtime: number }
  /**
   * The task threw Ignore: acked, nothing stored. `replacedBy`: it called
   * replace(sig), and the worker sends this signature in its place, given
   * the task's id, links, group, chord and chain (worker/task-path/follow-ups.ts).
   */
  | { status: 'ignored'; runtime: number; replacedBy?: Signature; skipped?: { lock: string; leaseLeftMs: number } }
  /** The task threw Reject: the message is rejected (or requeued), nothing stored. */
  | { status: 'rejected'; requeue: boolean; reason: string | null; runtime: number }
) & {
  /** The slot holds the task's end handlers and signals until the worker calls the pool's afterStored(). */
  endHooks?: true
  /** The run span's trace context, when the slot traces: the parent of the worker's follow-up sends (src/tracing/). */
  trace?: Record<string, string>
}

export type ToSlot =
  | { type: 'run'; job: Job }
  | { type: 'abort'; id: string; reason: 'revoked' | 'soft-time-limit' }
  /** The worker stored the task's end state: run the end hooks its outcome held. */
  | { type: 'stored'; id: string }
  | { type: 'exit' }

export type FromSlot =
  | { type: 'ready'; pid: number }
  | { type: 'started'; id: string }
  /** rss: the slot's resident set in bytes after the task (--max-memory-per-child). */
  | { type: 'done'; id: string; outcome: Outcome; rss?: number }
  | { type: 'load-error'; message: string }
  /** The running task called updateState(). */
  | { type: 'state'; id: string; state: string; meta: unknown }

/** The parts of a delivery and its message the rest of Celery's task.request is made of. */
export interface RequestSource {
  message: {
    eta: string | null
    expires: string | null
    groupIndex: number | null
    embed: { callbacks: Signature[] | null; errbacks: Signature[] | null; chain: Signature[] | null; chord: Signature | null }
  }
  delivery: {
    exchange: string
    routingKey: string
    redelivered: boolean
    properties: {
      priority: number
      replyTo?: string
      contentType?: string
      contentEncoding?: string
      deliveryMode?: number
      correlationId?: string
      appId?: string
      expiration?: string
    }
  }
}

/**
 * Sets on `job` the request fields a task may read from currentTask()
 * (deliveryInfo, eta, expires, replyTo, groupIndex, callbacks, errbacks,
 * chain, chord), each only when the message has it: a plain task's job, which
 * every pool slot receives, grows by its delivery info alone. On Redis a
 * delivery that was not restored says nothing of redelivery: null, as kombu.
 */
export function setRequestFields(job: Job, { message: m, delivery: d }: RequestSource, transportKind: string | undefined): Job {
  job.deliveryInfo = {
    exchange: d.exchange,
    routingKey: d.routingKey,
    priority: d.properties.priority ?? null,
    redelivered: d.redelivered ? true : transportKind === 'redis' ? null : false,
  }
  if (m.eta) job.eta = m.eta
  if (m.expires) job.expires = m.expires
  if (d.properties.replyTo) job.replyTo = d.properties.replyTo
  job.properties = messageProperties(d.properties)
  if (m.groupIndex !== null && m.groupIndex !== undefined) job.groupIndex = m.groupIndex
  const { callbacks, errbacks, chain, chord } = m.embed
  if (callbacks?.length) job.callbacks = callbacks
  if (errbacks?.length) job.errbacks = errbacks
  if (chain?.length) job.chain = chain
  if (chord) job.chord = chord
  return job
}

/** Celery's request.properties: the message's properties by kombu's names (its headers are the request's own fields). */
function messageProperties(p: RequestSource['delivery']['properties']): Record<string, unknown> {
  const out: Record<string, unknown> = {
    content_type: p.contentType,
    content_encoding: p.contentEncoding,
    delivery_mode: p.deliveryMode,
    priority: p.priority,
  }
  if (p.correlationId !== undefined) out.correlation_id = p.correlationId
  if (p.replyTo !== undefined) out.reply_to = p.replyTo
  if (p.appId !== undefined) out.app_id = p.appId
  if (p.expiration !== undefined) out.expiration = p.expiration
  return out
}
