// A task as app.task() registers it: its options (Celery's Task attributes,
// with the app's task_* settings as defaults), how it is sent, and apply()
// (eager); delay(), applyAsync() and its signatures s(), si(), map(),
// starmap(), chunks() are every TaskHandle's (task-handle.ts).
import type { DedupOptions, TaskConcurrencyOptions, TaskLockOptions, TaskOnceOptions } from '../locks/index.js'
import type { App } from './app.js'
import type { AsyncResult } from './async-result.js'
import { TaskHandle, type ApplyCall, type ApplyOptions } from './task-handle.js'
import { applyAsyncEagerly, applyEagerly, isAlwaysEager, type EagerApplyOptions, type EagerResult } from './eager.js'
import { sendOnce } from './locking.js'
import type { RetryOptions } from './task-context.js'

export interface TaskOptions {
  /** Hard time limit, seconds: the task is killed (prefork) or abandoned. */
  timeLimit?: number
  /** Soft time limit, seconds: the task's AbortSignal fires. */
  softTimeLimit?: number
  /** `10/s`, `100/m`, `5/h`, or a number per second. */
  rateLimit?: string | number
  /**
   * Who the rate limit binds (docs/rate-limits.md): each worker on its own ('worker', Celery's
   * and the default), or every tsq worker together through one bucket in Redis ('cluster').
   */
  rateLimitScope?: 'worker' | 'cluster'
  ignoreResult?: boolean
  /** Ack after the task finishes (tsq's default); false acks when it starts, as Celery's default. */
  acksLate?: boolean
  /** Retries before a retry fails the task instead (Celery: 3); null: no limit. */
  maxRetries?: number | null
  /** Seconds before a retry runs when retry() names no countdown (Celery: 180). */
  defaultRetryDelay?: number
  /** Pass the TaskContext as the first argument (Celery's bind=True). */
  bind?: boolean
  /**
   * As a link_error, called in the worker with (request, exc, traceback), as
   * Celery calls an errback whose function takes more than one argument,
   * instead of being sent as a task with the failed task's id.
   */
  requestErrback?: boolean
  /** Queue that delay() and applyAsync() send to by default. */
  queue?: string
  trackStarted?: boolean
  /**
   * Errors that make the task retry by itself (Celery's autoretry_for): error
   * classes (`[TypeError]`, `[Error]` for any), or names matched against the
   * error's class chain, `name` and `code` (`['FetchError', 'ECONNRESET']`).
   */
  autoretryFor?: Array<(new (...args: any[]) => unknown) | string>
  /** What those retries pass to `retry()` (Celery's retry_kwargs): `{ maxRetries: 5, countdown: 10 }`. */
  retryKwargs?: Omit<RetryOptions, 'exc'>
  /** Exponential backoff for those retries: `true` or a factor in seconds (1 → 1, 2, 4, 8 … s). */
  retryBackoff?: boolean | number
  /** The longest backoff, seconds (Celery: 600). */
  retryBackoffMax?: number
  /** Draws each backoff at random from 0 up to its value, so retries spread out (Celery: true). */
  retryJitter?: boolean
  /**
   * A late-ack message whose task failed or hit its time limit is acked
   * (true, Celery's default) or rejected without requeue, so that a queue's
   * dead-letter exchange gets it (Celery's acks_on_failure_or_timeout).
   */
  acksOnFailureOrTimeout?: boolean
  /**
   * A late-ack message whose pool process died goes back to the queue (true,
   * tsq's default), or the task fails with WorkerLostError and the message is
   * settled as a failure (false, Celery's default reject_on_worker_lost).
   */
  rejectOnWorkerLost?: boolean
  /**
   * One run at a time per key (docs/locks.md, "One task at a time"): `{ key, timeout, onLocked, retryDelay }`.
   * The worker takes the lock before the task runs, renews it every third of `timeout`, frees it when the run ends.
   */
  lock?: TaskLockOptions
  /**
   * celery-once's de-duplication (docs/locks.md, "Sent once"): `{ key, timeout, graceful }`. delay() and applyAsync()
   * refuse a task whose key is already queued or running (AlreadyQueued), or with `graceful` give its AsyncResult.
   */
  once?: TaskOnceOptions
  /** Deduplication at send, BullMQ's modes (docs/deduplication.md): the default of every send of this task. */
  dedup?: DedupOptions
  /**
   * At most `limit` runs of one key at once across the cluster, keys served in turn (docs/concurrency-keys.md):
   * `{ key: (args, kwargs) => args[0].tenant, limit: 2 }`. Needs a Redis store (conf.lock_url, the broker or the backend).
   */
  concurrency?: TaskConcurrencyOptions
  // Celery's Task handler methods, called where the task runs, around it; what
  // they throw is logged and changes nothing (the result is the task's).
  /** Before the task's function (Celery's before_start). */
  beforeStart?: (info: { taskId: string; args: unknown[]; kwargs: Record<string, unknown> }) => unknown
  onSuccess?: (info: { retval: unknown; taskId: string; args: unknown[]; kwargs: Record<string, unknown> }) => unknown
  onFailure?: (info: {
    exc: unknown
    taskId: string
    args: unknown[]
    kwargs: Record<string, unknown>
    traceback: string | null
  }) => unknown
  onRetry?: (info: { exc: unknown; taskId: string; args: unknown[]; kwargs: Record<string, unknown>; traceback: string | null }) => unknown
  /** After a success or failure, not a retry, Ignore or Reject (Celery's after_return). */
  afterReturn?: (info: {
    status: string
    retval: unknown
    taskId: string
    args: unknown[]
    kwargs: Record<string, unknown>
    traceback: string | null
  }) => unknown
}

export type TaskFunction = (...args: any[]) => unknown

/** A bound task's arguments: its function's parameters after the context. */
export type AfterFirst<P extends unknown[]> = P extends [] ? [] : P extends [unknown?, ...infer Rest] ? Rest : P

/**
 * Celery's task_* settings in `conf`, as defaults for every task's options
 * (an option given to app.task() wins, as a Task attribute wins in Celery).
 * Time limits and acks_late are the worker's (their flags win over them).
 */
export function taskDefaultsFromConf(conf: Record<string, unknown>): TaskOptions {
  const defaults: TaskOptions = {}
  const rate = conf.task_default_rate_limit
  if (typeof rate === 'string' || typeof rate === 'number') defaults.rateLimit = rate
  const scope = conf.task_default_rate_limit_scope
  // Checked where it matters, as the worker starts (a typo must not fall back to per worker unseen).
  if (typeof scope === 'string') defaults.rateLimitScope = scope as TaskOptions['rateLimitScope']
  if (typeof conf.task_ignore_result === 'boolean') defaults.ignoreResult = conf.task_ignore_result
  if (typeof conf.task_track_started === 'boolean') defaults.trackStarted = conf.task_track_started
  if (typeof conf.task_default_retry_delay === 'number') defaults.defaultRetryDelay = conf.task_default_retry_delay
  if (typeof conf.task_acks_on_failure_or_timeout === 'boolean') defaults.acksOnFailureOrTimeout = conf.task_acks_on_failure_or_timeout
  if (typeof conf.task_reject_on_worker_lost === 'boolean') defaults.rejectOnWorkerLost = conf.task_reject_on_worker_lost
  return defaults
}

/**
 * A task of this app: `A` its arguments and `R` what it returns (a promise's
 * value for an async function), as app.task() infers them from the function.
 */
export class Task<A extends unknown[] = unknown[], R = unknown> extends TaskHandle<A, R> {
  constructor(
    readonly app: App,
    readonly name: string,
    readonly fn: TaskFunction,
    readonly options: TaskOptions,
  ) {
    super()
  }

  protected send(args: unknown[], kwargs: Record<string, unknown>, options: ApplyOptions): Promise<AsyncResult> {
    // Celery's task_always_eager: run here, no broker; the result is an EagerResult.
    if (isAlwaysEager(this.app)) return applyAsyncEagerly(this.app, this, args, kwargs, options)
    // Celery's Task.priority, from task_default_priority: the priority of a send that gives none.
    const priority = this.app.options.conf?.task_default_priority
    const send: ApplyOptions = {
      queue: this.options.queue,
      // Always the key (undefined when unset), as Celery's apply_async passes priority: what keeps a child from inheriting its parent's.
      priority: typeof priority === 'number' ? priority : undefined,
      timeLimit: this.options.timeLimit ?? null,
      softTimeLimit: this.options.softTimeLimit ?? null,
      ignoreResult: this.options.ignoreResult,
      dedup: this.options.dedup,
      ...options,
    }
    if (this.options.once) {
      const { once, ...rest } = send
      return sendOnce(this.app, this, args, kwargs, once, rest.id, (id) =>
        this.app.sendTask(this.name, args, kwargs, id ? { ...rest, id } : rest),
      )
    }
    return this.app.sendOwned(this.name, args, kwargs, send)
  }

  /**
   * Celery's `task.apply()`: runs the task here and now, with no broker, as a
   * worker would (currentTask(), retries at once, signals, handlers, links),
   * and gives its EagerResult. A failure is the result's FAILURE state, or,
   * with `{ throw: true }` (default: the app's `task_eager_propagates`), the
   * promise rejects with the task's error.
   */
  apply(...call: ApplyCall<A, EagerApplyOptions>): Promise<EagerResult<R>> {
    const [args = [], kwargs = {}, options = {}] = call
    return applyEagerly(this.app, this, args, kwargs, options) as Promise<EagerResult<R>>
  }
}
