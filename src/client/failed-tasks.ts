// The failed-task inbox (docs/failed-tasks.md): the failed tasks a result
// backend holds, the messages tsq workers kept of theirs, and what events
// said, as one list with filters; and the one way a failed task is sent
// again, for `tsq failed retry` and the dashboard alike. A kept message is
// published again as it was delivered (same bytes, headers, properties, id,
// exchange and routing key); without one, only result_extended's arguments
// where they are exact (resend.ts), as a new task; otherwise refused.
import type { FailedStore, KeptMessage, ResultBackend } from '../backends/index.js'
import { dumps, encodeException, exceptionRepr, isExceptionInfo, type ResultMeta } from '../protocol/index.js'
import type { Transport } from '../transport/index.js'
import { originalCall, ResendRefusedError } from './resend.js'
import { sendTask } from './send-task.js'

export interface FailedTask {
  taskId: string
  task: string | null
  excType: string | null
  /** The exception's repr: `ValueError('boom')`. */
  exception: string | null
  worker: string | null
  /** When it failed, ISO 8601 (the result's date_done, the kept message's time, or the event's). */
  failedAt: string | null
  queue: string | null
  traceback: string | null
  /** Where it was seen: the result backend, a kept message, events. */
  sources: ('backend' | 'kept' | 'events')[]
  /** How a retry sends it: the kept message itself, or a new task with result_extended's arguments; null when it cannot. */
  replay: 'message' | 'arguments' | null
}

export interface FailedFilter {
  /** The task's name; `*` matches any run of characters. */
  task?: string
  /** A part of the exception's type or repr (case-insensitive). */
  exception?: string
  /** The worker's node name; `*` matches any run of characters. */
  worker?: string
  since?: Date
  until?: Date
}

/** A failure as the dashboard's events tell it (cluster-state's task record). */
export interface FailedEvent {
  uuid: string
  name?: string | null
  exception?: string | null
  traceback?: string | null
  worker?: string | null
  /** Unix seconds. */
  timestamp?: number | null
}

function glob(pattern: string): RegExp {
  return new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`)
}

/** When it failed, in ms; a naive time (Celery's date_done) is UTC. NaN when unknown. */
function failedAtMs(t: FailedTask): number {
  if (!t.failedAt) return NaN
  return Date.parse(/(Z|[+-]\d\d:\d\d)$/.test(t.failedAt) ? t.failedAt : `${t.failedAt}Z`)
}

/** Whether `t` passes every filter given. */
export function matchesFailedFilter(t: FailedTask, f: FailedFilter): boolean {
  if (f.task && !(t.task && glob(f.task).test(t.task))) return false
  if (f.worker && !(t.worker && glob(f.worker).test(t.worker))) return false
  if (f.exception) {
    const needle = f.exception.toLowerCase()
    if (!`${t.excType ?? ''}\n${t.exception ?? ''}`.toLowerCase().includes(needle)) return false
  }
  if (f.since || f.until) {
    const at = failedAtMs(t)
    if (Number.isNaN(at)) return false
    if (f.since && at < f.since.getTime()) return false
    if (f.until && at > f.until.getTime()) return false
  }
  return true
}

function fromMeta(meta: ResultMeta): FailedTask {
  const m = meta as ResultMeta & { name?: unknown; worker?: unknown; queue?: unknown; args?: unknown }
  const exc = isExceptionInfo(meta.result) ? meta.result : null
  return {
    taskId: String(meta.task_id),
    task: typeof m.name === 'string' ? m.name : null,
    excType: exc ? exc.exc_type : null,
    exception: exc ? exceptionRepr(exc) : null,
    worker: typeof m.worker === 'string' ? m.worker : null,
    failedAt: meta.date_done ?? null,
    queue: typeof m.queue === 'string' ? m.queue : null,
    traceback: meta.traceback ?? null,
    sources: ['backend'],
    replay: Array.isArray(m.args) ? 'arguments' : null,
  }
}

function withKept(t: FailedTask | undefined, k: KeptMessage): FailedTask {
  return {
    taskId: k.taskId,
    task: t?.task ?? k.task,
    excType: t?.excType ?? k.excType,
    exception: t?.exception ?? k.exception,
    worker: t?.worker ?? k.worker,
    failedAt: t?.failedAt ?? k.failedAt,
    queue: t?.queue ?? k.queue,
    traceback: t?.traceback ?? null,
    sources: [...(t?.sources ?? []), 'kept'],
    replay: 'message',
  }
}

function withEvent(t: FailedTask | undefined, e: FailedEvent): FailedTask {
  const at = typeof e.timestamp === 'number' ? new Date(e.timestamp * 1000).toISOString() : null
  const excType = e.exception ? (/^([\w.]+)\(/.exec(e.exception)?.[1] ?? null) : null
  return {
    taskId: e.uuid,
    task: t?.task ?? e.name ?? null,
    excType: t?.excType ?? excType,
    exception: t?.exception ?? e.exception ?? null,
    worker: t?.worker ?? e.worker ?? null,
    failedAt: t?.failedAt ?? at,
    queue: t?.queue ?? null,
    traceback: t?.traceback ?? e.traceback ?? null,
    sources: [...(t?.sources ?? []), 'events'],
    replay: t?.replay ?? null,
  }
}

/** The inbox's store on `backend`, or a line saying why there is none. */
export function failedStoreOf(backend: ResultBackend | null): FailedStore {
  const store = backend?.failedStore?.()
  if (!store)
    throw new ResendRefusedError(
      backend
        ? `the result backend ${backend.displayUrl} keeps no failed tasks (rpc:// results go to their client only)`
        : 'no result backend configured: pass --result-backend, or set TSQ_RESULT_BACKEND or CELERY_RESULT_BACKEND',
    )
  return store
}

/**
 * Every failed task the backend, the kept messages and `events` know of,
 * newest first, filtered. A kept message whose task has since ended otherwise
 * (a retry that succeeded) is left out.
 */
export async function listFailed(
  backend: ResultBackend | null,
  filter: FailedFilter = {},
  options: { limit?: number; events?: Iterable<FailedEvent> } = {},
): Promise<FailedTask[]> {
  const limit = options.limit ?? 1000
  const byId = new Map<string, FailedTask>()
  const store = backend?.failedStore?.()
  if (store) {
    for (const meta of await store.failures(limit)) byId.set(String(meta.task_id), fromMeta(meta))
    for (const k of await store.keptList(limit)) {
      const known = byId.get(k.taskId)
      if (!known) {
        const status = (await backend!.get(k.taskId).catch(() => null))?.status
        // Not FAILURE now: retried and running or done; no status: a task that ignores its result.
        if (status && status !== 'FAILURE') continue
      }
      byId.set(k.taskId, withKept(known, k))
    }
  }
  for (const e of options.events ?? []) {
    const known = byId.get(e.uuid)
    if (!known && store) {
      const status = (await backend!.get(e.uuid).catch(() => null))?.status
      if (status && status !== 'FAILURE') continue
    }
    byId.set(e.uuid, withEvent(known, e))
  }
  return [...byId.values()]
    .filter((t) => matchesFailedFilter(t, filter))
    .sort((a, b) => (failedAtMs(b) || 0) - (failedAtMs(a) || 0))
    .slice(0, limit)
}

/** One failed task with what the inbox holds of it: its result, its kept message (body not decoded); null when it is not in the inbox. */
export async function showFailed(
  backend: ResultBackend | null,
  taskId: string,
): Promise<{ task: FailedTask; result: ResultMeta | null; kept: KeptMessage | null } | null> {
  const store = failedStoreOf(backend)
  const result = await backend!.get(taskId)
  // A kept message whose task has a state other than FAILURE was sent again (RETRY) or has run since.
  if (result && result.status !== 'FAILURE') return null
  const kept = await store.kept(taskId)
  if (!kept && !result) return null
  const fromResult = result?.status === 'FAILURE' ? fromMeta(result) : undefined
  return { task: kept ? withKept(fromResult, kept) : fromResult!, result, kept }
}

export interface Replayed {
  /** The id the task runs under again: its own for a kept message, a new one for a re-send of its arguments. */
  taskId: string
  from: string
  how: 'message' | 'arguments'
  exchange: string
  routingKey: string
}

/**
 * Sends the failed task `taskId` again: its kept message as it was (same id;
 * the stored FAILURE is marked RETRY, then replaced by the new run's outcome), else its
 * result_extended arguments where they are exact, as a new task (new id);
 * else ResendRefusedError with the reason.
 */
export async function replayFailed(transport: Transport, backend: ResultBackend | null, taskId: string): Promise<Replayed> {
  const kept = await backend?.failedStore?.().kept(taskId)
  if (kept) {
    // The stored FAILURE becomes RETRY first (Celery's state for a task sent again), so a client
    // reading the result waits for the new run's outcome instead of reading the old one as ready.
    const stored = await backend!.get(taskId).catch(() => null)
    if (stored?.status === 'FAILURE') {
      const retry = encodeException('Retry', ['sent again by tsq failed retry'], 'celery.exceptions')
      await backend!.store(taskId, dumps({ ...stored, status: 'RETRY', result: retry, traceback: null, date_done: null }), 'RETRY')
    }
    // Not a send: no queue is declared, nothing in the message changes. The exchange and queue it came through exist.
    await transport.publish(kept.exchange, kept.routingKey, { body: kept.body, properties: kept.properties })
    return { taskId, from: taskId, how: 'message', exchange: kept.exchange, routingKey: kept.routingKey }
  }
  const call = await originalCall(taskId, backend)
  const queue = call.queue ?? undefined
  const id = await sendTask(transport, call.task, { args: call.args, kwargs: call.kwargs, ...(queue ? { queue } : {}) })
  return { taskId: id, from: taskId, how: 'arguments', exchange: '', routingKey: queue ?? 'celery' }
}

/** Drops failed tasks from the inbox: the kept message and the stored result (AsyncResult.forget()). */
export async function purgeFailed(backend: ResultBackend | null, taskIds: readonly string[]): Promise<number> {
  const store = failedStoreOf(backend)
  await store.drop(taskIds)
  for (const id of taskIds) await backend!.forget(id)
  return taskIds.length
}
