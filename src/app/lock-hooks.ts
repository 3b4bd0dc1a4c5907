// The task options `lock` and `once` and app.lock() are the app's surface, but
// their code lives in locks/, a layer above the app (it needs the stores and
// the transports). The app reaches it through these hooks, which locks/index.ts
// fills as it loads; the package entry, the worker and a pool slot load it.
// The option types live here, below both, so the app declares its options
// without importing upward.
import type { App, Task } from './app.js'
import type { AsyncResult } from './async-result.js'
import type { RunningJob } from './execution/executor.js'
import type { Job } from './execution/jobs.js'

export type LockKey = ((...args: any[]) => unknown) | readonly string[]

/** The task option `lock`. */
export interface TaskLockOptions {
  /**
   * A function of the task's positional arguments (the kwargs object last), or
   * a list of argument names (kwargs first, then positions by the function's
   * parameter names). Absent: one run of the task at a time.
   */
  key?: LockKey
  /** Seconds of lease; renewed every third of it while the task runs. Default 60. */
  timeout?: number
  /** What a run that finds the lock held does. Default 'skip'. */
  onLocked?: 'skip' | 'retry' | 'fail'
  /** Seconds before the retry with `onLocked: 'retry'` (up to 1 s of jitter added). Default 1. */
  retryDelay?: number
}

/** The task option `once` (celery-once): refuse to send a task whose key is already queued or running. */
export interface TaskOnceOptions {
  /** As the lock's `key`; absent: one queued or running task of this name at a time, whatever its arguments. */
  key?: LockKey
  /** Seconds the mark lives at most (celery-once's default, an hour): a sender's guard against a mark nobody clears. */
  timeout?: number
  /** A refused send gives the queued task's AsyncResult instead of throwing AlreadyQueued. */
  graceful?: boolean
}

/** What one send may change of the task's `once` (celery-once's `apply_async(once={...})`). */
export type OnceSendOptions = Pick<TaskOnceOptions, 'graceful' | 'timeout'>

export interface AppLockOptions {
  /** Seconds of lease, renewed every third of it while `fn` runs. Default 60. */
  timeout?: number
  /** Seconds to keep trying while another holder has it; absent or 0: throw LockedError at once. */
  wait?: number
}

/** What `fn` is given: the lock's id, its fencing token, and a signal that fires if the lease is lost. */
export interface Lease {
  readonly id: string
  readonly token: number
  readonly signal: AbortSignal
}

/** A run that can be told its lock is gone (the executor's JobExecution). */
export interface LockableRun extends RunningJob {
  lockLost(reason: Error): void
}

export interface LockHooks {
  sendOnce(app: App, task: Task, args: unknown[], kwargs: Record<string, unknown>, given: OnceSendOptions | undefined, taskId: string | undefined, send: (id: string) => Promise<AsyncResult>): Promise<AsyncResult>
  withAppLock<T>(app: App, name: string, options: AppLockOptions, fn: (lease: Lease) => T | Promise<T>): Promise<T>
  runLocked(app: App, task: Task, job: Job, start: (lock: { id: string; token: number }) => LockableRun): RunningJob
  closeLockStores(): Promise<void>
}

let hooks: LockHooks | undefined

export function setLockHooks(given: LockHooks): void {
  hooks = given
}

// Running a locked task unlocked, or sending a `once` task unmarked, would
// break its promise without a word: refuse instead.
function notLoaded(what: string): Error {
  return new Error(`${what} needs tsq's locks, which this process has not loaded: import the package entry ('tsq'), which loads them`)
}

export function sendOnce(app: App, task: Task, args: unknown[], kwargs: Record<string, unknown>, given: OnceSendOptions | undefined, taskId: string | undefined, send: (id: string) => Promise<AsyncResult>): Promise<AsyncResult> {
  return hooks ? hooks.sendOnce(app, task, args, kwargs, given, taskId, send) : Promise.reject(notLoaded(`task ${task.name}: the option once`))
}

export function withAppLock<T>(app: App, name: string, options: AppLockOptions, fn: (lease: Lease) => T | Promise<T>): Promise<T> {
  return hooks ? hooks.withAppLock(app, name, options, fn) : Promise.reject(notLoaded(`app.lock(${name})`))
}

export function runLocked(app: App, task: Task, job: Job, start: (lock: { id: string; token: number }) => LockableRun): RunningJob {
  if (!hooks) throw notLoaded(`task ${task.name}: the option lock`)
  return hooks.runLocked(app, task, job, start)
}

/** Without the locks loaded, no store was opened: nothing to close. */
export function closeLockStores(): Promise<void> {
  return hooks ? hooks.closeLockStores() : Promise.resolve()
}
