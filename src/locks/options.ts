// The options of the task locks, as a task module writes them: the task
// options `lock` and `once` and app.lock()'s. The app declares its TaskOptions
// with these; the stores and ids below read them.

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

/** A task as the locks read it: its name, its function (for a key given as argument names) and its options. */
export interface LockedTask {
  name: string
  fn: (...args: any[]) => unknown
}
