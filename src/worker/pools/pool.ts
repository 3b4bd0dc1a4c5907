import type { StateSink, Job, Outcome } from '../../app/index.js'

export type PoolKind = 'prefork' | 'threads' | 'solo'

/**
 * How a pool that keeps its slots fed tells the worker about a job it took
 * beyond its free slots (staged: waiting in a slot behind the job running
 * there, so the slot goes on to it without a round trip to the worker).
 */
export interface Placement {
  /** The job started in its slot: at once on an idle slot, else when the job before it there ended (or its end hooks were released). */
  started(): void
  /**
   * The job is given back unstarted (its slot is busy for long, retires or
   * died, or the worker asked for it back); its outcome never comes. The pool
   * gives several back last first, so putting each back at the head of a
   * queue keeps their order.
   */
  returned(): void
}

export interface SlotInfo {
  index: number
  pid: number
  /** Task id running in the slot, if any. */
  taskId: string | null
  since: number | null
}

/**
 * What the worker needs from a pool. The worker never runs more jobs at once
 * than `size`; the pool only places them and reports how they ended.
 */
export interface Pool {
  readonly kind: PoolKind
  readonly size: number
  /** `eager`: a pool that starts its slots when jobs need them (threads) starts them all now. */
  start(options?: { eager?: boolean }): Promise<void>
  /**
   * How the job ended: at once when it ended within the call (the solo pool,
   * a task that returned without a promise), else a promise of it.
   * `timeLimit` (seconds) kills the job where the pool can; `sink` receives
   * the task's updateState() calls, before its outcome.
   */
  run(job: Job, timeLimit: number | null, sink?: StateSink): Outcome | Promise<Outcome>
  /**
   * Pools that keep their slots fed (prefork, threads): whether a job given
   * to place() now would be taken (started on an idle slot, or staged behind
   * a short running job), so the worker may hand over more jobs than `size`.
   */
  canPlace?(): boolean
  /**
   * run() for a job the worker has not started yet: the pool calls
   * `placement.started()` when it starts (the worker counts it active from
   * then) or `placement.returned()` if it gives it back unstarted.
   */
  place?(job: Job, timeLimit: number | null, sink: StateSink | undefined, placement: Placement): Promise<Outcome>
  /** Gives back the staged jobs with these ids (every staged job without ids); resolves once each has started or been returned. */
  unstage?(ids?: readonly string[]): Promise<void>
  /**
   * The worker has stored the end state of a task whose outcome carried
   * `endHooks`: its handlers and signals run now. Until then the slot takes
   * no other task.
   */
  afterStored(taskId: string): void
  /** Ends a running task; returns false if it is not running here. */
  terminate(taskId: string, signal: NodeJS.Signals | number): boolean
  /** Fires the task's AbortSignal (revoke without terminate while it runs). */
  abort(taskId: string): void
  grow(n: number): Promise<void>
  shrink(n: number): Promise<void>
  slots(): SlotInfo[]
  /** Stops the slots; cold: kills running tasks now. */
  close(options: { cold: boolean }): Promise<void>
}
