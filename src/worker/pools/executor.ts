// Runs one job against the app's registry, in whatever slot hosts it: the main
// event loop (solo), a worker thread, or a child process. Turns whatever the
// task does (returns, throws, retries, overruns its soft limit) into an Outcome.
import type { App, Task } from '../../app/app.js'
import { RetryRequest, runWithContext, SoftTimeLimitExceeded, taskPredicate, type RetryOptions, type StateSink, type TaskContext } from '../../app/task-context.js'
import { runReceiver, AppSignals } from '../../app/app-signals.js'
import { dumps, EncodeError, saferepr } from '../../protocol/index.js'
import type { EncodedException, Job, Outcome } from './jobs.js'

/** Celery's Task.max_retries default. */
const DEFAULT_MAX_RETRIES = 3

/**
 * Whether a retry asked for at `retries` is past the limit, so the task fails
 * instead (Celery's Task.retry): the limit retry() named, else the task's,
 * else 3; a limit of null means no limit. The slot's signals and the worker's
 * retry both decide by this.
 */
export function retriesExhausted(retries: number, askedLimit: number | null, taskLimit: number | null | undefined): boolean {
  const limit = askedLimit ?? taskLimit ?? DEFAULT_MAX_RETRIES
  return limit !== null && retries >= limit
}

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

/** kombu's EncodeError as Celery stores it: its cause, in Python's words, as the one argument. */
export function encodeFailure(error: EncodeError): EncodedException {
  return { type: 'EncodeError', args: [error.reason], module: 'kombu.exceptions', message: error.reason }
}

/**
 * What a slot sends instead of an outcome it cannot hand over (a result with
 * a function in it): the failure the solo pool's worker would record when it
 * encodes the same value, so every pool fails such a task alike.
 */
export function unsendableOutcome(outcome: Outcome, sendError: unknown): Outcome {
  // An error's own arguments go as their reprs, as Celery stores arguments it cannot encode.
  if ((outcome.status === 'failure' || outcome.status === 'retry') && outcome.exc) {
    return { ...outcome, exc: { ...outcome.exc, args: outcome.exc.args.map((arg) => (typeof arg === 'string' ? arg : saferepr(arg))) } }
  }
  const value = outcome.status === 'success' ? outcome.value : outcome
  let reason: EncodeError
  try {
    dumps(value)
    reason = new EncodeError(sendError)
  } catch (error) {
    reason = error instanceof EncodeError ? error : new EncodeError(error)
  }
  const failure: Outcome = { status: 'failure', exc: encodeFailure(reason), traceback: null, runtime: outcome.runtime }
  // The slot still holds the task's end hooks: the worker must release them.
  if (outcome.endHooks) failure.endHooks = true
  return failure
}

function traceback(error: unknown): string | null {
  return error instanceof Error && error.stack ? error.stack : null
}

export interface RunningJob {
  /**
   * How the run ended, when the task ended within the call (it returned a
   * plain value or threw): the solo pool takes it as it is, with no promise.
   */
  readonly immediate: Outcome | undefined
  readonly outcome: Promise<Outcome>
  abort(reason: 'revoked' | 'soft-time-limit'): void
  /** Runs the end handlers and signals an outcome marked `endHooks` held back; once. */
  releaseEndHooks(): void
}

/**
 * What a task sees as `currentTask()` (or its first argument with `bind`).
 * One object per run, its behaviour on the prototype: a noop task's cost is
 * mostly allocation, and a context built from closures was a dozen objects
 * per task.
 */
class RunContext implements TaskContext {
  readonly id: string
  readonly name: string
  readonly args: unknown[]
  readonly kwargs: Record<string, unknown>
  readonly retries: number
  readonly rootId: string | null
  readonly parentId: string | null
  readonly group: string | null
  readonly hostname: string
  readonly headers: Record<string, unknown> | undefined
  // Made on first use of `signal`: most tasks never read it, and an
  // AbortController per task was a measurable share of a noop task's cost.
  #controller: AbortController | undefined
  #abortReason: Error | undefined
  readonly #sink: StateSink | undefined

  constructor(job: Job, sink: StateSink | undefined) {
    this.#sink = sink
    this.id = job.id
    this.name = job.task
    this.args = job.args
    this.kwargs = job.kwargs
    this.retries = job.retries
    this.rootId = job.rootId
    this.parentId = job.parentId
    this.group = job.group
    this.hostname = job.hostname
    this.headers = job.headers
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController()
      if (this.#abortReason) this.#controller.abort(this.#abortReason)
    }
    return this.#controller.signal
  }

  /** Needs no `this`, so `const { retry } = currentTask()` works too. */
  retry(options: RetryOptions = {}): never {
    throw new RetryRequest(options)
  }

  updateState(state: string, meta: unknown = null): Promise<void> {
    if (typeof state !== 'string' || state === '') return Promise.reject(new TypeError('updateState(state, meta): state must be a non-empty string such as "PROGRESS"'))
    if (!this.#sink) return Promise.resolve()
    try {
      return Promise.resolve(this.#sink(this.id, state, meta === undefined ? null : meta))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** The first reason wins; a signal made later starts out aborted with it. */
  abortWith(reason: Error): boolean {
    if (this.#abortReason) return false
    this.#abortReason = reason
    this.#controller?.abort(reason)
    return true
  }
}

class JobExecution implements RunningJob {
  immediate: Outcome | undefined
  private pending: Promise<Outcome> | undefined
  private readonly context: RunContext
  private readonly started = performance.now()
  private softTimer: NodeJS.Timeout | undefined
  private heldEndHooks: (() => void) | undefined

  constructor(
    private readonly task: Task,
    private readonly job: Job,
    sink: StateSink | undefined,
    /** Only when a signal receiver or a task handler listens: the common case skips them all. */
    private readonly signals: AppSignals | undefined,
    /** Hold the end handlers and signals until the worker has stored the result (releaseEndHooks). */
    private readonly holdEndHooks: boolean,
  ) {
    this.context = new RunContext(job, sink)
    if (job.softTimeLimit && job.softTimeLimit > 0) this.softTimer = setTimeout(() => this.abort('soft-time-limit'), job.softTimeLimit * 1000)
    if (signals) {
      const { beforeStart } = task.options
      if (beforeStart) runReceiver(`${job.task} beforeStart`, beforeStart, { taskId: job.id, args: job.args, kwargs: job.kwargs })
      signals.send('task_prerun', { sender: job.task, taskId: job.id, args: job.args, kwargs: job.kwargs, headers: job.headers ?? {} })
    }
    let returned: unknown
    try {
      returned = task.options.bind ? runWithContext(this.context, task.fn, [this.context, ...job.args]) : runWithContext(this.context, task.fn, job.args)
    } catch (error) {
      this.immediate = this.failed(error)
      return
    }
    // A task that returns a plain value is done now; only a promise is waited
    // for (an async function per task was a visible share of a noop's cost).
    if (isThenable(returned)) {
      this.pending = Promise.resolve(returned).then(
        (value) => this.succeeded(value),
        (error: unknown) => this.failed(error),
      )
    } else {
      this.immediate = this.succeeded(returned)
    }
  }

  get outcome(): Promise<Outcome> {
    return (this.pending ??= Promise.resolve(this.immediate!))
  }

  abort(reason: 'revoked' | 'soft-time-limit'): void {
    this.context.abortWith(reason === 'soft-time-limit' ? new SoftTimeLimitExceeded(this.job.softTimeLimit ?? 0) : Object.assign(new Error('revoked'), { name: 'TaskRevokedError' }))
  }

  private runtime(): number {
    return (performance.now() - this.started) / 1000
  }

  private succeeded(value: unknown): Outcome {
    if (this.softTimer) clearTimeout(this.softTimer)
    const outcome: Outcome = { status: 'success', value: value === undefined ? null : value, runtime: this.runtime() }
    if (this.signals) this.endHooks(this.signals, outcome, null)
    return outcome
  }

  private failed(error: unknown): Outcome {
    if (this.softTimer) clearTimeout(this.softTimer)
    const outcome = this.outcomeOf(error)
    if (this.signals) this.endHooks(this.signals, outcome, error)
    return outcome
  }

  /**
   * Celery's trace stores the result before it calls on_success/on_failure,
   * task_success/task_failure, after_return and task_postrun, so a handler
   * that reads the task's own result finds it. Here the worker stores it, so
   * a pool holds the hooks until the worker says the result is stored.
   */
  private endHooks(signals: AppSignals, outcome: Outcome, error: unknown): void {
    if (!this.holdEndHooks) return this.signalEnd(signals, outcome, error)
    outcome.endHooks = true
    this.heldEndHooks = () => this.signalEnd(signals, outcome, error)
  }

  releaseEndHooks(): void {
    const hooks = this.heldEndHooks
    this.heldEndHooks = undefined
    hooks?.()
  }

  /**
   * The task's handler and the signal for how it ended (onSuccess and
   * task_success, onFailure and task_failure, onRetry and task_retry), then
   * afterReturn and task_postrun, in the order of Celery's trace. A retry past
   * the task's limit fails it (the worker stores the failure), so it is
   * announced as the failure it becomes.
   */
  private signalEnd(signals: AppSignals, outcome: Outcome, error: unknown): void {
    const { job } = this
    const { onSuccess, onFailure, onRetry, afterReturn } = this.task.options
    const base = { sender: job.task, taskId: job.id }
    const about = { taskId: job.id, args: job.args, kwargs: job.kwargs }
    let state: string
    let retval: unknown = error
    let tb: string | null = null
    switch (outcome.status) {
      case 'success':
        state = 'SUCCESS'
        retval = outcome.value
        if (onSuccess) runReceiver(`${job.task} onSuccess`, onSuccess, { retval, ...about })
        signals.send('task_success', { ...base, result: outcome.value })
        break
      case 'retry': {
        const reason = error instanceof RetryRequest ? (error.options.exc ?? null) : error
        tb = traceback(reason)
        if (retriesExhausted(job.retries, outcome.maxRetries, this.task.options.maxRetries)) {
          state = 'FAILURE'
          retval = reason
          if (onFailure) runReceiver(`${job.task} onFailure`, onFailure, { exc: reason, ...about, traceback: tb })
          signals.send('task_failure', { ...base, exception: reason, args: job.args, kwargs: job.kwargs, traceback: tb })
        } else {
          state = 'RETRY'
          if (onRetry) runReceiver(`${job.task} onRetry`, onRetry, { exc: reason, ...about, traceback: tb })
          signals.send('task_retry', { ...base, retries: job.retries, reason })
        }
        break
      }
      case 'failure':
        state = 'FAILURE'
        tb = outcome.traceback
        if (onFailure) runReceiver(`${job.task} onFailure`, onFailure, { exc: error, ...about, traceback: tb })
        signals.send('task_failure', { ...base, exception: error, args: job.args, kwargs: job.kwargs, traceback: tb })
        break
      default:
        state = outcome.status === 'ignored' ? 'IGNORED' : 'REJECTED'
    }
    // Celery skips after_return for its IGNORE_STATES: RETRY, IGNORED, REJECTED.
    if (afterReturn && (state === 'SUCCESS' || state === 'FAILURE')) runReceiver(`${job.task} afterReturn`, afterReturn, { status: state, retval, ...about, traceback: tb })
    signals.send('task_postrun', { ...base, args: job.args, kwargs: job.kwargs, retval, state })
  }

  private outcomeOf(error: unknown): Outcome {
    if (error instanceof RetryRequest) return this.retryOutcome(error.options)
    const predicate = taskPredicate(error)
    if (predicate?.kind === 'ignore') return { status: 'ignored', runtime: this.runtime() }
    if (predicate?.kind === 'reject') return { status: 'rejected', requeue: predicate.requeue, reason: predicate.reason, runtime: this.runtime() }
    const autoretry = autoretryOptions(this.task, error, this.job.retries)
    if (autoretry) return this.retryOutcome(autoretry)
    return { status: 'failure', exc: encodeError(error), traceback: traceback(error), runtime: this.runtime() }
  }

  private retryOutcome(o: RetryOptions): Outcome {
    return {
      status: 'retry',
      countdown: o.countdown ?? null,
      eta: o.eta ? o.eta.toISOString() : null,
      maxRetries: o.maxRetries ?? null,
      exc: o.exc ? encodeError(o.exc) : null,
      runtime: this.runtime(),
    }
  }
}

/**
 * The retry a task's `autoretryFor` asks for when `error` matches it (Celery's
 * autoretry_for, celery/app/autoretry.py): `retryKwargs`, with the countdown
 * from `retryBackoff` when set: factor × 2^retries, at most `retryBackoffMax`
 * (600 s), and with `retryJitter` (on by default) a whole number drawn from
 * 0 up to that, as Celery's get_exponential_backoff_interval.
 */
export function autoretryOptions(task: Task, error: unknown, retries: number, random: () => number = Math.random): RetryOptions | undefined {
  const o = task.options
  if (!o.autoretryFor?.some((match) => matchesError(match, error))) return undefined
  const options: RetryOptions = { ...o.retryKwargs, exc: error instanceof Error ? error : new Error(String(error)) }
  const factor = o.retryBackoff === true ? 1 : Math.trunc(Number(o.retryBackoff ?? 0))
  if (factor > 0) {
    const countdown = Math.min(Math.trunc(o.retryBackoffMax ?? 600), factor * 2 ** retries)
    options.countdown = Math.max(0, o.retryJitter === false ? countdown : Math.floor(random() * (countdown + 1)))
  }
  return options
}

/**
 * An error class matches by instanceof; a string matches the name of the
 * error's class or of any class it inherits from, its `name`, or its `code`
 * (Node's system errors are plain Errors told apart by code: 'ECONNRESET').
 */
function matchesError(match: (new (...args: any[]) => unknown) | string, error: unknown): boolean {
  if (typeof match === 'function') return error instanceof match
  if (error === null || typeof error !== 'object') return false
  for (let proto: unknown = error; proto !== null && proto !== undefined; proto = Object.getPrototypeOf(proto)) {
    const name = (proto as { constructor?: { name?: unknown } }).constructor?.name
    if (name === match) return true
  }
  const { name, code } = error as { name?: unknown; code?: unknown }
  return name === match || code === match
}

/** For an app without signal receivers whose task has handlers. */
const NO_RECEIVERS = new AppSignals()

/**
 * `holdEndHooks`: a pool's run, whose worker stores the result after the run;
 * an outcome that then carries `endHooks` waits for releaseEndHooks().
 */
export function executeJob(app: App, job: Job, sink?: StateSink, { holdEndHooks = false }: { holdEndHooks?: boolean } = {}): RunningJob {
  const task = app.tasks.get(job.task)
  if (!task) {
    const unknown: Outcome = { status: 'failure', exc: { type: 'NotRegistered', args: [job.task], module: 'celery.exceptions', message: job.task }, traceback: null, runtime: 0 }
    return { immediate: unknown, outcome: Promise.resolve(unknown), abort: () => undefined, releaseEndHooks: () => undefined }
  }
  const o = task.options
  const observed = app.signals?.observingRuns || o.beforeStart || o.onSuccess || o.onFailure || o.onRetry || o.afterReturn
  return new JobExecution(task, job, sink, observed ? (app.signals ?? NO_RECEIVERS) : undefined, holdEndHooks)
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function'
}
