// What a running task can know about itself. Reached through `currentTask()`
// (AsyncLocalStorage, so it follows awaits) or as the first argument of a task
// registered with `{ bind: true }` (Celery's `bind=True`).
import { AsyncLocalStorage } from 'node:async_hooks'
import { TsqError, type Signature } from '../protocol/index.js'

export interface RetryOptions {
  /** Seconds before the retry runs (default: the task's defaultRetryDelay, 180 s). */
  countdown?: number
  eta?: Date
  /** The error that made the task retry; stored as the RETRY state's result. */
  exc?: Error
  maxRetries?: number
}

/**
 * How the message reached the worker: Celery's `request.delivery_info`
 * (`exchange`, `routing_key`, `priority`, `redelivered`), with JavaScript's
 * key names. `redelivered` is null where the broker does not say (Redis,
 * unless the message was restored after a visibility timeout), as in Celery.
 */
export interface DeliveryInfo {
  exchange: string
  routingKey: string
  priority: number | null
  redelivered: boolean | null
}

/** What a task run is, as the worker hands it to a pool slot and the slot to the task. */
export interface TaskRun {
  id: string
  args: unknown[]
  kwargs: Record<string, unknown>
  retries: number
  rootId: string | null
  parentId: string | null
  group: string | null
  hostname: string
  /** The sender's node name (the `origin` header), carried only with a sender's own headers (a trace context). */
  origin?: string | null
  /**
   * The message's headers beyond Celery's own (a trace context a sender's
   * before_task_publish added, say), as Celery puts them on `self.request`;
   * absent when there are none.
   */
  headers?: Record<string, unknown>
  // The rest of Celery's task.request, each absent (null in the context) when
  // the message has none, so a plain task's run carries nothing more.
  deliveryInfo?: DeliveryInfo
  /** The message's `eta` header, an ISO 8601 string, as Celery's request.eta. */
  eta?: string | null
  /** The message's `expires` header, an ISO 8601 string, as Celery's request.expires. */
  expires?: string | null
  /** The reply_to property: where an rpc:// result goes (the sending client's queue). */
  replyTo?: string | null
  groupIndex?: number | null
  /** The signatures applied with the result when the task succeeds (Celery's request.callbacks: `link`). */
  callbacks?: Signature[] | null
  /** The signatures applied with the task's id when it fails (request.errbacks: `link_error`). */
  errbacks?: Signature[] | null
  /** The chain's remaining steps, the next one last (request.chain). */
  chain?: Signature[] | null
  /** The body of the chord this task is a header part of (request.chord). */
  chord?: Signature | null
  /** The message's properties by kombu's names (`content_type`, `priority`, `reply_to`, `app_id`…), as Celery's request.properties. */
  properties?: Record<string, unknown> | null
}

export interface TaskContext extends TaskRun {
  name: string
  /** The lock this run holds (task option `lock`): its id and fencing token, for a store that refuses a deposed holder; null without one. */
  readonly lock?: { readonly id: string; readonly token: number } | null
  /** Aborts on soft time limit or revoke; pass it to fetch(), timers and child work. */
  signal: AbortSignal
  /** The group this task is a member of, as Celery's `request.group` (the same as `group`). */
  readonly groupId: string | null
  deliveryInfo: DeliveryInfo
  eta: string | null
  expires: string | null
  replyTo: string | null
  groupIndex: number | null
  callbacks: Signature[] | null
  errbacks: Signature[] | null
  chain: Signature[] | null
  chord: Signature | null
  properties: Record<string, unknown> | null
  /**
   * Adds `sig` to the chord this task is a header part of (Celery's
   * `self.add_to_chord(sig)`): the chord waits for it too, and the body gets
   * its result after the header's. Resolves when it is sent.
   */
  addToChord(sig: Signature): Promise<void>
  /** Stops this run and schedules the task again with the same id (Celery's `self.retry()`). */
  retry(options?: RetryOptions): never
  /**
   * Ends this run and puts `sig` in its place, as Celery's `self.replace(sig)`:
   * the replacement takes this task's id (a chain's last step, a chord's
   * body), so whoever waits for this task's result gets the replacement's;
   * it inherits this task's callbacks, errbacks, group, chord and the rest of
   * its chain. A group is replaced by a chord whose body gathers the
   * group's results into a list. This run ends as Ignore ends it (nothing
   * stored for it, the message acked); the worker sends the replacement.
   */
  replace(sig: Signature): never
  /**
   * Stores a state of the task's own choosing, such as `PROGRESS` with
   * `{ current, total }` as its meta, where clients polling the result see it
   * (Celery's `self.update_state(state=..., meta=...)`). Resolves once the
   * worker has it; the task's end state is stored after every update.
   */
  updateState(state: string, meta?: unknown): Promise<void>
}

/** Where a run's `updateState()` calls go: the worker that stores them. */
export type StateSink = (taskId: string, state: string, meta: unknown) => void | Promise<void>

// These cross the wire and the task's result under Celery's names (Retry,
// Ignore, Reject, SoftTimeLimitExceeded), set after TsqError names them by class.

/** Thrown by `retry()`; the worker turns it into a republished message and a RETRY state. */
export class RetryRequest extends TsqError {
  constructor(readonly options: RetryOptions) {
    super('RETRY', options.exc ? `Retry in ${options.countdown ?? 'default'}s: ${options.exc.message}` : 'Retry requested')
    this.name = 'Retry'
  }
}

// Ignore and Reject are told apart by a registry symbol, not instanceof: in the
// solo pool the worker's bundled copy of this module is not the one a task
// module imports as 'tsq', so each has its own classes.
const PREDICATE = Symbol.for('tsq.taskPredicate')

/** What a thrown Ignore or Reject asks of the worker; undefined for any other error. */
export function taskPredicate(
  error: unknown,
):
  { kind: 'ignore' } | { kind: 'replace'; signature: Signature } | { kind: 'reject'; requeue: boolean; reason: string | null } | undefined {
  if (typeof error !== 'object' || error === null) return undefined
  const kind = (error as Record<symbol, unknown>)[PREDICATE]
  if (kind === 'ignore') return { kind }
  if (kind === 'replace') return { kind, signature: (error as { signature: Signature }).signature }
  if (kind === 'reject') {
    const { requeue, reason } = error as { requeue?: unknown; reason?: unknown }
    return { kind, requeue: requeue === true, reason: typeof reason === 'string' ? reason : null }
  }
  return undefined
}

/**
 * Thrown by a task to end its run without a result: the message is acked and
 * no state is stored (Celery's `Ignore`), for a task that recorded its outcome
 * another way or decided there is nothing to do.
 */
export class Ignore extends TsqError {
  constructor(message = 'ignored') {
    super('IGNORE', message)
    this.name = 'Ignore'
    Object.defineProperty(this, PREDICATE, { value: 'ignore' })
  }
}

/**
 * Thrown by `replace()` (Celery raises Ignore('Replaced by new task')): the
 * run ends as ignored, and the worker sends `signature` in its place.
 */
export class ReplaceRequest extends TsqError {
  constructor(readonly signature: Signature) {
    super('REPLACE', 'Replaced by new task')
    this.name = 'Ignore'
    Object.defineProperty(this, PREDICATE, { value: 'replace' })
  }
}

/**
 * Thrown by a task to reject its message (Celery's `Reject`): dropped (or
 * dead-lettered, where the queue has a dead-letter exchange), or put back for
 * another worker with `requeue: true`. No state is stored.
 */
export class Reject extends TsqError {
  readonly requeue: boolean
  constructor(
    readonly reason: string | null = null,
    options: { requeue?: boolean } = {},
  ) {
    super('REJECT', reason ?? 'rejected')
    this.name = 'Reject'
    this.requeue = options.requeue ?? false
    Object.defineProperty(this, PREDICATE, { value: 'reject' })
  }
}

/** Raised into a task when its soft time limit passes (also the AbortSignal's reason). */
export class SoftTimeLimitExceeded extends TsqError {
  constructor(seconds: number) {
    super('SOFT_TIME_LIMIT', `SoftTimeLimitExceeded(${seconds})`)
    this.name = 'SoftTimeLimitExceeded'
  }
}

// One store per process, even when two copies of this module are loaded (the
// bundled CLI's and the one a task module imports as 'tsq'), so the solo
// pool's context is what currentTask() sees.
const STORE_KEY = Symbol.for('tsq.taskContext')
const holder = globalThis as unknown as Record<symbol, AsyncLocalStorage<TaskContext> | undefined>
const storage = (holder[STORE_KEY] ??= new AsyncLocalStorage<TaskContext>())

/** `fn(...args)` with `context` as the current task; args go through as they are, not copied. */
export function runWithContext<T>(context: TaskContext, fn: (...args: any[]) => T, args: readonly unknown[] = []): T {
  return storage.run(context, Reflect.apply, fn, undefined, args) as T
}

/** The context of the task running in this async flow, or undefined outside a task. */
export function runningTask(): TaskContext | undefined {
  return storage.getStore()
}

/** The context of the task running in this async flow; throws outside a task. */
export function currentTask(): TaskContext {
  const ctx = storage.getStore()
  if (!ctx) throw new Error('currentTask() called outside a running task')
  return ctx
}
