// Celery's built-in tasks (celery/app/builtins.py) that Python clients send by
// name: `add.map(xs)` is `celery.map`, `add.starmap(pairs)` is `celery.starmap`,
// and `add.chunks(pairs, n)` is a group of `celery.starmap` tasks. Every app
// has them, so a tsq worker runs these canvases as a Celery worker does. Like
// Celery's, they stay out of `inspect registered` unless builtins are asked for.
import type { App } from './app.js'
import type { Task } from './task.js'
import { currentTask } from './task-context.js'

/** What Celery raises when a name has no task: `NotRegistered('proj.nope')`. */
function notRegistered(name: string): Error {
  return Object.assign(new Error(name), { name: 'NotRegistered', module: 'celery.exceptions', args: [name] })
}

function taskNamed(app: App, sig: unknown): Task {
  const name = typeof sig === 'string' ? sig : (sig as { task?: unknown } | null)?.task
  const task = typeof name === 'string' ? app.tasks.get(name) : undefined
  if (!task) throw notRegistered(String(name))
  return task
}

/**
 * Calls the task's function in this process, once per item and in order, as
 * Celery's `[task(item) for item in it]` does: the signature's own args are
 * not used, and an async task is awaited before the next item starts.
 */
function callEach(app: App, sig: unknown, it: unknown, argsOf: (item: unknown) => unknown[]): unknown[] | Promise<unknown[]> {
  const task = taskNamed(app, sig)
  const items = Array.isArray(it) ? it : []
  const results: unknown[] = []
  const call = (item: unknown): unknown => (task.options.bind ? task.fn(currentTask(), ...argsOf(item)) : task.fn(...argsOf(item)))
  for (let i = 0; i < items.length; i += 1) {
    const value = call(items[i])
    if (value !== null && typeof value === 'object' && typeof (value as PromiseLike<unknown>).then === 'function') {
      // Only an async task pays for a promise chain; the rest stay synchronous.
      return (async () => {
        results.push(await value)
        for (const item of items.slice(i + 1)) results.push(await call(item))
        return results
      })()
    }
    results.push(value)
  }
  return results
}

/** Celery sends the canvas as kwargs (`{task, it}`); positional args are taken too. */
function mapArgs(args: unknown[]): [unknown, unknown] {
  const kwargs = currentTask().kwargs
  return [args[0] ?? kwargs.task, args[1] ?? kwargs.it]
}

export function registerBuiltinTasks(app: App): void {
  app.task('celery.map', (...args: unknown[]) => {
    const [sig, it] = mapArgs(args)
    return callEach(app, sig, it, (item) => [item])
  })
  app.task('celery.starmap', (...args: unknown[]) => {
    const [sig, it] = mapArgs(args)
    return callEach(app, sig, it, (item) => (Array.isArray(item) ? item : [item]))
  })
  // Task.replace with a group; returns its args, or the one at kwargs.index.
  app.task('celery.accumulate', (...args: unknown[]) => {
    const index = currentTask().kwargs.index
    return typeof index === 'number' ? args[index] : args
  })
  // Beat's daily cleanup for result stores that do not expire results
  // themselves; tsq's (Redis TTLs, rpc:// replies, file://) have nothing to do.
  app.task('celery.backend_cleanup', () => null)
  // The SQL backends' chord join: a tsq worker runs it in its main process
  // (worker/task-path/chord-parts.ts unlockChord), never as a task body.
  app.task(
    'celery.chord_unlock',
    () => {
      throw new Error('celery.chord_unlock runs in the worker, beside the result backend')
    },
    { ignoreResult: true },
  )
}
