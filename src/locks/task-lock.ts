// What the worker's pool slot asks before a locked task runs: the lock's id
// (the key function runs here, so a key that throws fails the task with its
// error), then the lock itself, renewed while the task runs. And what the
// worker's main process asks afterwards: who holds a running task's lock, and
// freeing the locks of a pool slot that died.
import { isMainThread, threadId } from 'node:worker_threads'
import { tryHold, type HeldLock } from './hold.js'
import type { LockedTask, TaskLockOptions } from './options.js'
import { DEFAULT_LOCK_TIMEOUT_S, lockIdFor, parameterNames } from './lock-id.js'
import { holderOf, LockStoreUnavailableError } from './lock.js'
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
    const got = await tryHold(
      await openLockStore(r.settings),
      lockId,
      leaseMs,
      { node: r.node, pid: process.pid, ...(isMainThread ? {} : { thread: threadId }), task: r.task, taskId: r.taskId },
      r.log,
    )
    if (got.held) return { kind: 'held', held: got.held }
    return { kind: 'locked', lockId, remainingMs: got.remainingMs }
  } catch (error) {
    return {
      kind: 'unavailable',
      error:
        error instanceof LockStoreUnavailableError ? error : new LockStoreUnavailableError(url.replace(/\/\/[^@/]*@/, '//***@'), error),
    }
  }
}

/** Seconds before a run that found its lock held tries again: retryDelay (1) plus up to 1 s of jitter. */
export function lockedRetryDelay(options: TaskLockOptions, random: () => number = Math.random): number {
  return (options.retryDelay ?? 1) + random()
}

/**
 * Frees the locks a pool process or thread held when it died or was
 * terminated (its holder is `<node>:<pid>`, a thread's `<node>:<pid>/<thread>`),
 * so the next run of that key starts at once rather than when the lease runs out.
 */
export async function releaseLostSlotLocks(
  settings: LockSettings,
  node: string,
  pid: number,
  log?: (message: string) => void,
  threadId?: number,
): Promise<void> {
  try {
    const freed = await (await openLockStore(settings)).releaseHolder(holderOf({ node, pid, thread: threadId }))
    if (freed.length)
      log?.(
        `Freed ${freed.length} lock(s) held by lost pool ${threadId === undefined ? `process ${pid}` : `thread ${threadId}`}: ${freed.join(', ')}`,
      )
  } catch (error) {
    log?.(`Could not free the locks of lost pool process ${pid} (their leases run out instead): ${(error as Error).message}`)
  }
}

/**
 * The lock a running task holds, for `inspect active`: the pool process took
 * it, so the main process derives its id from the task's key and asks the
 * store who holds it; shown only when that holder is this run. A store that
 * cannot answer leaves the lock out rather than fail the reply.
 */
export async function heldLockOf(
  settings: LockSettings,
  task: LockedTask & { lock: TaskLockOptions },
  run: { id: string; args: readonly unknown[]; kwargs: Record<string, unknown> },
): Promise<{ id: string; token: number; holder: string; lease_left: number } | null> {
  try {
    const id = lockIdFor(task.name, task.lock, run.args, run.kwargs, Array.isArray(task.lock.key) ? parameterNames(task.fn) : [])
    const held = await (await openLockStore(settings)).get(id)
    if (!held || held.taskId !== run.id) return null
    return { id, token: held.token, holder: held.holder, lease_left: held.leftMs / 1000 }
  } catch {
    return null
  }
}
