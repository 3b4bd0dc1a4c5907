// Runs one job against the app's registry, in whatever slot hosts it: the main
// event loop (solo), a worker thread, or a child process. Turns whatever the
// task does (returns, throws, retries, overruns its soft limit) into an Outcome.
import type { App } from '../../app/app.js'
import { RetryRequest, runWithContext, SoftTimeLimitExceeded, type RetryOptions, type TaskContext } from '../../app/task-context.js'
import type { EncodedException, Job, Outcome } from './jobs.js'

export function encodeError(error: unknown): EncodedException {
  if (error instanceof Error) {
    // A task may throw an error carrying Python-style `args`/`module` to control exc_message/exc_module.
    const extra = error as unknown as { args?: unknown; module?: unknown }
    const args = Array.isArray(extra.args) ? extra.args : [error.message]
    const module = typeof extra.module === 'string' ? extra.module : 'builtins'
    // Python clients rebuild the class from exc_type/exc_module; a JS `Error`
    // would not exist there, so it travels as Python's closest base, Exception.
    const type = error.name === 'Error' ? 'Exception' : error.name
    return { type, args, module, message: error.message }
  }
  return { type: 'Exception', args: [String(error)], module: 'builtins', message: String(error) }
}

function traceback(error: unknown): string | null {
  return error instanceof Error && error.stack ? error.stack : null
}

export interface RunningJob {
  outcome: Promise<Outcome>
  abort(reason: 'revoked' | 'soft-time-limit'): void
}

export function executeJob(app: App, job: Job): RunningJob {
  const started = performance.now()
  const runtime = () => (performance.now() - started) / 1000
  let softTimer: NodeJS.Timeout | undefined
  // Made on first use of context.signal: most tasks never read it, and an
  // AbortController per task was a measurable share of a noop task's cost.
  let controller: AbortController | undefined
  let abortReason: Error | undefined
  const signal = (): AbortSignal => {
    if (!controller) {
      controller = new AbortController()
      if (abortReason) controller.abort(abortReason)
    }
    return controller.signal
  }
  const abort = (reason: 'revoked' | 'soft-time-limit') => {
    if (abortReason) return
    abortReason = reason === 'soft-time-limit' ? new SoftTimeLimitExceeded(job.softTimeLimit ?? 0) : Object.assign(new Error('revoked'), { name: 'TaskRevokedError' })
    controller?.abort(abortReason)
  }
  const task = app.tasks.get(job.task)
  if (!task) {
    const unknown: Outcome = { status: 'failure', exc: { type: 'NotRegistered', args: [job.task], module: 'celery.exceptions', message: job.task }, traceback: null, runtime: 0 }
    return { outcome: Promise.resolve(unknown), abort }
  }
  if (job.softTimeLimit && job.softTimeLimit > 0) softTimer = setTimeout(() => abort('soft-time-limit'), job.softTimeLimit * 1000)
  const context: TaskContext = {
    id: job.id,
    name: job.task,
    args: job.args,
    kwargs: job.kwargs,
    retries: job.retries,
    rootId: job.rootId,
    parentId: job.parentId,
    group: job.group,
    hostname: job.hostname,
    get signal() {
      return signal()
    },
    retry(options: RetryOptions = {}): never {
      throw new RetryRequest(options)
    },
  }
  const succeeded = (value: unknown): Outcome => {
    if (softTimer) clearTimeout(softTimer)
    return { status: 'success', value: value === undefined ? null : value, runtime: runtime() }
  }
  const failed = (error: unknown): Outcome => {
    if (softTimer) clearTimeout(softTimer)
    if (error instanceof RetryRequest) {
      const o = error.options
      return {
        status: 'retry',
        countdown: o.countdown ?? null,
        eta: o.eta ? o.eta.toISOString() : null,
        maxRetries: o.maxRetries ?? null,
        exc: o.exc ? encodeError(o.exc) : null,
        runtime: runtime(),
      }
    }
    return { status: 'failure', exc: encodeError(error), traceback: traceback(error), runtime: runtime() }
  }
  let returned: unknown
  try {
    const args = task.options.bind ? [context, ...job.args] : job.args
    returned = runWithContext(context, () => task.fn(...args))
  } catch (error) {
    return { outcome: Promise.resolve(failed(error)), abort }
  }
  // A task that returns a plain value is done now; only a promise is waited
  // for (an async function per task was a visible share of a noop's cost).
  const outcome = isThenable(returned) ? Promise.resolve(returned).then(succeeded, failed) : Promise.resolve(succeeded(returned))
  return { outcome, abort }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function'
}
