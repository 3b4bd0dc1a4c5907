// The task option `once` (celery-once's sender-side de-duplication): before a
// send, a mark `<task>-once-<md5 of key>` naming the new task's id is set in
// the lock store unless one is there; a send that finds one throws
// AlreadyQueued, or with `graceful` gives the queued task's result. The
// worker clears the mark when the task ends (once-mark.ts); the mark's
// timeout bounds it when nobody does (a revoked task no worker takes).
import { randomUUID } from 'node:crypto'
import { AlreadyQueued, LockStoreUnavailableError } from './lock.js'
import { DEFAULT_ONCE_TIMEOUT_S, onceIdFor, parameterNames } from './lock-id.js'
import { openLockStore, type LockSettings } from './open-store.js'
import type { LockedTask, OnceSendOptions, TaskOnceOptions } from './options.js'

/**
 * Sends through `send` (given the new task's id) once the mark is set; with
 * `graceful`, a send that finds the mark gives `queued(the queued task's id)`.
 */
export async function sendOnce<R>(
  settings: LockSettings,
  task: LockedTask & { once: TaskOnceOptions },
  args: unknown[],
  kwargs: Record<string, unknown>,
  given: OnceSendOptions | undefined,
  taskId: string | undefined,
  send: (id: string) => Promise<R>,
  queued: (taskId: string) => R,
): Promise<R> {
  const options = { ...task.once, ...given }
  const markId = onceIdFor(task.name, options, args, kwargs, Array.isArray(options.key) ? parameterNames(task.fn) : [])
  const timeout = options.timeout ?? DEFAULT_ONCE_TIMEOUT_S
  if (!(timeout > 0))
    throw new RangeError(`task ${task.name}: once.timeout must be a number of seconds above 0, got ${String(options.timeout)}`)
  const id = taskId ?? randomUUID()
  let got
  try {
    got = await (await openLockStore(settings)).mark(markId, id, Math.round(timeout * 1000))
  } catch (error) {
    throw error instanceof LockStoreUnavailableError
      ? error
      : new LockStoreUnavailableError((settings.lockUrl ?? settings.brokerUrl).replace(/\/\/[^@/]*@/, '//***@'), error)
  }
  if (!got.set) {
    if (options.graceful) return queued(got.taskId)
    throw new AlreadyQueued(markId, got.taskId, got.remainingMs)
  }
  try {
    return await send(id)
  } catch (error) {
    // Not sent: nothing will clear the mark, so it goes now.
    await openLockStore(settings)
      .then((store) => store.unmark(markId, id))
      .catch(() => undefined)
    throw error
  }
}
