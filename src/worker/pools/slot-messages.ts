// What crosses between the worker and a pool slot (a prefork child over its
// IPC channel, a worker thread over its port). Each crossing carries an array
// of messages, in order: a drain of many short tasks moves a batch of jobs one
// way and a batch of outcomes the other, not three messages per task (one
// structured clone, one write and one wake-up per crossing, not per task).
import type { Job, Outcome } from '../../app/index.js'

export type ToSlot =
  /** Jobs to run one after another, after those already sent (packed on the way: see packJobs). */
  | { type: 'jobs'; jobs: Job[] }
  | PackedJobs
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

/**
 * Jobs of one shape as their keys once and their values in a row: structured
 * clone writes (and the slot reads back, interning each) every key of every
 * object, eleven per job, which was most of what a batch of jobs cost.
 */
export interface PackedJobs {
  type: 'packed-jobs'
  keys: string[]
  values: unknown[]
}

/** `jobs` as runs of jobs with the same keys, in order. */
export function packJobs(jobs: readonly Job[]): PackedJobs[] {
  const out: PackedJobs[] = []
  let current: PackedJobs | undefined
  for (const job of jobs) {
    const keys = Object.keys(job)
    if (!current || !sameKeys(current.keys, keys)) out.push((current = { type: 'packed-jobs', keys, values: [] }))
    for (const key of keys) current.values.push((job as unknown as Record<string, unknown>)[key])
  }
  return out
}

export function unpackJobs(packed: PackedJobs): Job[] {
  const { keys, values } = packed
  const jobs: Job[] = []
  for (let i = 0; i < values.length; i += keys.length) {
    const job: Record<string, unknown> = {}
    for (let k = 0; k < keys.length; k++) job[keys[k]!] = values[i + k]
    jobs.push(job as unknown as Job)
  }
  return jobs
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}
