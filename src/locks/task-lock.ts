// What the worker's pool slot asks before a locked task runs: the lock's id
// (the key function runs here, so a key that throws fails the task with its
// error), then the lock itself, renewed while the task runs.
import { isMainThread, threadId } from 'node:worker_threads'
import { tryHold, type HeldLock } from './hold.js'
import type { TaskLockOptions } from '../app/index.js'
import { DEFAULT_LOCK_TIMEOUT_S, lockIdFor, parameterNames } from './lock-id.js'
import { LockStoreUnavailableError } from './lock.js'
import { lockUrlFor, openLockStore, type LockSettings } from './open-store.js'

export interface TaskLockRequest {
  task: string
  fn: (...args: any[]) => unknown
  options: TaskLockOptions
  args: readonly unknown[]
  kwargs: Record<string, unknown>
  taskId: string
  node: string
  settings: LockSettings
  log?: (message: string) => void
}

export type TaskLockAnswer =
  | { kind: 'held'; held: HeldLock }
  | { kind: 'locked'; lockId: string; remainingMs: number }
  /** The key function threw: the task fails with this error. */
  | { kind: 'key-error'; error: unknown }
  /** The store is unreachable: the task is not run unlocked; its message goes back. */
  | { kind: 'unavailable'; error: LockStoreUnavailableError }

export async function acquireTaskLock(r: TaskLockRequest): Promise<TaskLockAnswer> {
  let lockId: string
  try {
    lockId = lockIdFor(r.task, r.options, r.args, r.kwargs, Array.isArray(r.options.key) ? parameterNames(r.fn) : [])
  } catch (error) {
    return { kind: 'key-error', error }
  }
  const leaseMs = Math.max(1, Math.round((r.options.timeout ?? DEFAULT_LOCK_TIMEOUT_S) * 1000))
  let url = r.settings.lockUrl ?? r.settings.brokerUrl
  try {
    url = lockUrlFor(r.settings)
    const got = await tryHold(await openLockStore(r.settings), lockId, leaseMs, { node: r.node, pid: process.pid, ...(isMainThread ? {} : { thread: threadId }), task: r.task, taskId: r.taskId }, r.log)
    if (got.held) return { kind: 'held', held: got.held }
    return { kind: 'locked', lockId, remainingMs: got.remainingMs }
  } catch (error) {
    return { kind: 'unavailable', error: error instanceof LockStoreUnavailableError ? error : new LockStoreUnavailableError(url.replace(/\/\/[^@/]*@/, '//***@'), error) }
  }
}

/** Seconds before a run that found its lock held tries again: retryDelay (1) plus up to 1 s of jitter. */
export function lockedRetryDelay(options: TaskLockOptions, random: () => number = Math.random): number {
  return (options.retryDelay ?? 1) + random()
}
