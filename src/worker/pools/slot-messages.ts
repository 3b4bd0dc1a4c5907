// What crosses between the worker and a pool slot (a prefork child over its
// IPC channel, a worker thread over its port). Each crossing carries an array
// of messages, in order: a drain of many short tasks moves a batch of jobs one
// way and a batch of outcomes the other, not three messages per task (one
// structured clone, one write and one wake-up per crossing, not per task).
import type { Job, Outcome } from './jobs.js'

export type ToSlot =
  /** Jobs to run one after another, after those already sent. */
  | { type: 'jobs'; jobs: Job[] }
  | { type: 'abort'; id: string; reason: 'revoked' | 'soft-time-limit' }
  /** The worker stored the task's end state: run the end hooks its outcome held, then go on to the next job. */
  | { type: 'stored'; id: string }
  /** Give back these jobs if they have not started: answered by 'unstaged'. */
  | { type: 'unstage'; ids: string[] }
  | { type: 'exit' }

export type FromSlot =
  | { type: 'ready'; pid: number }
  /** rss: the slot's resident set in bytes after the task, when the worker has a --max-memory-per-child. */
  | { type: 'done'; id: string; outcome: Outcome; rss?: number }
  /**
   * Tasks that succeeded (end hooks not held, no rss), flat: id, value,
   * runtime, id, value, runtime, ... The common outcome, without the keys
   * that structured clone writes and reads again for every object.
   */
  | { type: 'succeeded'; items: unknown[] }
  | { type: 'load-error'; message: string }
  /** The running task called updateState(). */
  | { type: 'state'; id: string; state: string; meta: unknown }
  /**
   * Jobs given back unstarted, in the order they were sent: asked for by
   * 'unstage', or offered when the slot stops taking jobs (over
   * --max-memory-per-child). `reply`: the answer to an 'unstage'.
   */
  | { type: 'unstaged'; ids: string[]; reply: boolean }
