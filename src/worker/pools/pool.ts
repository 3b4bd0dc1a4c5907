import type { StateSink } from '../../app/task-context.js'
import type { Job, Outcome } from './jobs.js'

export type PoolKind = 'prefork' | 'threads' | 'solo'

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
  start(): Promise<void>
  /**
   * How the job ended: at once when it ended within the call (the solo pool,
   * a task that returned without a promise), else a promise of it.
   * `timeLimit` (seconds) kills the job where the pool can; `sink` receives
   * the task's updateState() calls, before its outcome.
   */
  run(job: Job, timeLimit: number | null, sink?: StateSink): Outcome | Promise<Outcome>
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
