// The worker's side of the task option `once` (once.ts): the mark is
// cleared when the task ends, however it ends; not when it goes back to its
// queue (a retry, a requeue), where it is still queued.
import type { App } from '../app/index.js'
import { onceIdFor, parameterNames } from './lock-id.js'
import { openLockStore } from './open-store.js'
import { lockSettings } from './locked-run.js'

export function clearOnceMark(app: App, run: { id: string; task: string; args: readonly unknown[]; kwargs: Record<string, unknown> }, log: (message: string) => void): Promise<void> | undefined {
  const task = app.tasks.get(run.task)
  const once = task?.options.once
  if (!task || !once) return undefined
  return (async () => {
    let markId = ''
    try {
      markId = onceIdFor(run.task, once, run.args, run.kwargs, Array.isArray(once.key) ? parameterNames(task.fn) : [])
      await (await openLockStore(lockSettings(app))).unmark(markId, run.id)
    } catch (error) {
      log(`Could not clear the once mark ${markId || `of ${run.task}`} of ${run.id} (its timeout frees it instead): ${(error as Error).message}`)
    }
  })()
}
