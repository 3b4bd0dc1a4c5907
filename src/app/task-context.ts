// What a running task can know about itself. Reached through `currentTask()`
// (AsyncLocalStorage, so it follows awaits) or as the first argument of a task
// registered with `{ bind: true }` (Celery's `bind=True`).
import { AsyncLocalStorage } from 'node:async_hooks'

export interface RetryOptions {
  /** Seconds before the retry runs (default: the task's defaultRetryDelay, 180 s). */
  countdown?: number
  eta?: Date
  /** The error that made the task retry; stored as the RETRY state's result. */
  exc?: Error
  maxRetries?: number
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
}

export interface TaskContext extends TaskRun {
  name: string
  /** Aborts on soft time limit or revoke; pass it to fetch(), timers and child work. */
  signal: AbortSignal
  /** Stops this run and schedules the task again with the same id (Celery's `self.retry()`). */
  retry(options?: RetryOptions): never
}

/** Thrown by `retry()`; the worker turns it into a republished message and a RETRY state. */
export class RetryRequest extends Error {
  readonly code = 'RETRY'
  constructor(readonly options: RetryOptions) {
    super(options.exc ? `Retry in ${options.countdown ?? 'default'}s: ${options.exc.message}` : 'Retry requested')
    this.name = 'Retry'
  }
}

/** Raised into a task when its soft time limit passes (also the AbortSignal's reason). */
export class SoftTimeLimitExceeded extends Error {
  constructor(seconds: number) {
    super(`SoftTimeLimitExceeded(${seconds})`)
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

/** The context of the task running in this async flow; throws outside a task. */
export function currentTask(): TaskContext {
  const ctx = storage.getStore()
  if (!ctx) throw new Error('currentTask() called outside a running task')
  return ctx
}
