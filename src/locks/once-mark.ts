// The worker's side of the task option `once` (once.ts): the mark is
// cleared when the task ends, however it ends; not when it goes back to its
// queue (a retry, a requeue), where it is still queued.
import { onceIdFor, parameterNames } from './lock-id.js'
import { openLockStore, type LockSettings } from './open-store.js'
import type { LockedTask, TaskOnceOptions } from './options.js'

export async function clearOnceMark(
  settings: LockSettings,
  task: LockedTask & { once: TaskOnceOptions },
  run: { id: string; args: readonly unknown[]; kwargs: Record<string, unknown> },
  log: (message: string) => void,
): Promise<void> {
  let markId = ''
  try {
    markId = onceIdFor(task.name, task.once, run.args, run.kwargs, Array.isArray(task.once.key) ? parameterNames(task.fn) : [])
    await (await openLockStore(settings)).unmark(markId, run.id)
  } catch (error) {
    log(
      `Could not clear the once mark ${markId || `of ${task.name}`} of ${run.id} (its timeout frees it instead): ${(error as Error).message}`,
    )
  }
}
