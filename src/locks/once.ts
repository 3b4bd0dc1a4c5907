// The task option `once` (celery-once's sender-side de-duplication): before a
// send, a mark `<task>-once-<md5 of key>` naming the new task's id is set in
// the lock store unless one is there; a send that finds one throws
// AlreadyQueued, or with `graceful` gives the queued task's AsyncResult. The
// worker clears the mark when the task ends (once-mark.ts); the mark's
// timeout bounds it when nobody does (a revoked task no worker takes).
import { randomUUID } from 'node:crypto'
import { AlreadyQueued, LockStoreUnavailableError } from './lock.js'
import { DEFAULT_ONCE_TIMEOUT_S, onceIdFor, parameterNames } from './lock-id.js'
import { openLockStore } from './open-store.js'
import { lockSettings } from './locked-run.js'
import { AsyncResult, type App, type Task, type OnceSendOptions } from '../app/index.js'

export async function sendOnce(app: App, task: Task, args: unknown[], kwargs: Record<string, unknown>, given: OnceSendOptions | undefined, taskId: string | undefined, send: (id: string) => Promise<AsyncResult>): Promise<AsyncResult> {
  const options = { ...task.options.once, ...given }
  const markId = onceIdFor(task.name, options, args, kwargs, Array.isArray(options.key) ? parameterNames(task.fn) : [])
  const timeout = options.timeout ?? DEFAULT_ONCE_TIMEOUT_S
  if (!(timeout > 0)) throw new RangeError(`task ${task.name}: once.timeout must be a number of seconds above 0, got ${String(options.timeout)}`)
  const id = taskId ?? randomUUID()
  const settings = lockSettings(app)
  let got
  try {
    got = await (await openLockStore(settings)).mark(markId, id, Math.round(timeout * 1000))
  } catch (error) {
    throw error instanceof LockStoreUnavailableError ? error : new LockStoreUnavailableError((settings.lockUrl ?? settings.brokerUrl).replace(/\/\/[^@/]*@/, '//***@'), error)
  }
  if (!got.set) {
    if (options.graceful) return new AsyncResult(got.taskId, app)
    throw new AlreadyQueued(markId, got.taskId, got.remainingMs)
  }
  try {
    return await send(id)
  } catch (error) {
    // Not sent: nothing will clear the mark, so it goes now.
    await openLockStore(settings).then((store) => store.unmark(markId, id)).catch(() => undefined)
    throw error
  }
}
