// Runs one job against the app's registry, in whatever hosts it: a worker's
// main event loop (solo), a worker thread, a child process, or a test's own
// process (eager mode, app/eager.ts: which is why it lives in app/, below the
// worker, and not among the pools). Turns whatever the
// task does (returns, throws, retries, overruns its soft limit) into an Outcome.
import type { App } from '../app.js'
import type { Task } from '../task.js'
import {
  ReplaceRequest,
  RetryRequest,
  runWithContext,
  SoftTimeLimitExceeded,
  taskPredicate,
  type DeliveryInfo,
  type RetryOptions,
  type StateSink,
  type TaskContext,
} from '../task-context.js'
import { runReceiver, AppSignals } from '../app-signals.js'
import { canvasKind, dumps, EncodeError, resultTaskKind, saferepr, tasksOf, type Signature } from '../../protocol/index.js'
import type { EncodedException, Job, Outcome } from './jobs.js'
import { runLocked } from './locked-run.js'
import { traceJob } from './traced-run.js'
import { activeTracing } from '../../tracing/index.js'
import { setLongTimeout, type LongTimeout } from './long-timeout.js'

/** Celery's Task.max_retries default. */
const DEFAULT_MAX_RETRIES = 3

/**
 * Whether a retry asked for at `retries` is past the limit, so the task fails
 * instead (Celery's Task.retry): the limit retry() named, else the task's,
 * else 3; a limit of null means no limit. The slot's signals and the worker's
 * retry both decide by this.
 */
export function retriesExhausted(retries: number, askedLimit: number | null, taskLimit: number | null | undefined): boolean {
  // `??` alone would turn the task's explicit null (retry for ever) into 3.
  const limit = askedLimit ?? (taskLimit === undefined ? DEFAULT_MAX_RETRIES : taskLimit)
  return limit !== null && retries >= limit
}

export function encodeError(error: unknown): EncodedException {
  if (error instanceof Error) {
    // A task may throw an error carrying Python-style `args`/`module` to control exc_message/exc_module.
    const extra = error as unknown as { args?: unknown; module?: unknown }
    const args = Array.isArray(extra.args) ? extra.args : [error.message]
    const module = typeof extra.module === 'string' ? extra.module : 'builtins'
    // Python clients rebuild the class from exc_type/exc_module; a JS `Error`
    // would not exist there, so it travels as Python's closest base, Exception,
    // with its own name beside it for JavaScript clients (exc_js_name).
    if (error.name === 'Error') return { type: 'Exception', args, module, message: error.message, jsName: 'Error' }
    return { type: error.name, args, module, message: error.message }
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
  // The slot still holds the task's end hooks: the worker must release them,
  // and they announce the failure the task became, as Celery's trace does.
  if (outcome.endHooks) {
    failure.endHooks = true
    ;(outcome as HoldingOutcome)[HELD_BY]?.failInstead(failure, reason)
  }
  return failure
}

/** An outcome whose end hooks a JobExecution holds, marked with it (a mark that does not cross to the worker). */
const HELD_BY = Symbol('tsq.heldBy')
type HoldingOutcome = Outcome & { [HELD_BY]?: JobExecution }

/**
 * Why kombu's JSON cannot carry `value`, or undefined when it can: what the
 * worker would find when it stores the result, found where the task's end
 * hooks run, so they can announce a failure instead of a success.
 */
function encodeProblem(value: unknown): EncodeError | undefined {
  try {
    dumps(value)
    return undefined
  } catch (error) {
    return error instanceof EncodeError ? error : new EncodeError(error)
  }
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
  readonly deliveryInfo: DeliveryInfo
  readonly eta: string | null
  readonly expires: string | null
  readonly replyTo: string | null
  readonly groupIndex: number | null
  readonly callbacks: Signature[] | null
  readonly errbacks: Signature[] | null
  readonly chain: Signature[] | null
  readonly chord: Signature | null
  readonly properties: Record<string, unknown> | null
  /** The task lock this run holds (task option `lock`), set before the task starts. */
  lock: { readonly id: string; readonly token: number } | null = null
  // Made on first use of `signal`: most tasks never read it, and an
  // AbortController per task was a measurable share of a noop task's cost.
  #controller: AbortController | undefined
  #abortReason: Error | undefined
  readonly #sink: StateSink | undefined
  readonly #app: App | undefined

  constructor(job: Job, sink: StateSink | undefined, app?: App) {
    this.#sink = sink
    this.#app = app
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
    this.deliveryInfo = job.deliveryInfo ?? NO_DELIVERY_INFO
    this.eta = job.eta ?? null
    this.expires = job.expires ?? null
    this.replyTo = job.replyTo ?? null
    this.groupIndex = job.groupIndex ?? null
    this.callbacks = job.callbacks ?? null
    this.errbacks = job.errbacks ?? null
    this.chain = job.chain ?? null
    this.chord = job.chord ?? null
    this.properties = job.properties ?? null
  }

  addToChord(sig: Signature): Promise<void> {
    if (!this.#app) return Promise.reject(new Error('addToChord(): this run has no app to send with'))
    return this.#app.addToChord(sig, {
      group: this.group,
      groupIndex: this.groupIndex,
      chord: this.chord,
      rootId: this.rootId ?? this.id,
      parentId: this.id,
    })
  }

  /** Celery's `request.group`, by the name its execution options give it (`group_id`). */
  get groupId(): string | null {
    return this.group
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

  /** Checked here, in the task, as Celery's replace() checks before it raises Ignore; needs no `this` either. */
  replace(sig: Signature): never {
    if (typeof sig !== 'object' || sig === null || typeof sig.task !== 'string')
      throw new TypeError('replace(sig): sig must be a signature, such as add.s(2, 2)')
    // `'chord' in sig.options`, as Celery tests it: the replacement gets this task's chord instead.
    if (sig.options && 'chord' in sig.options) throw improperlyConfigured('A signature replacing a task must not be part of a chord')
    const kind = canvasKind(sig)
    if (kind === 'chain' && !tasksOf(sig).length) throw improperlyConfigured('Cannot replace with an empty chain')
    if (kind !== 'group' && resultTaskKind(sig) === 'group') {
      throw improperlyConfigured(
        `tsq replaces a task with a signature whose result is one task's (a task, or a chain or chord ending in one), or with a group; ${sig.task} ends in a group`,
      )
    }
    throw new ReplaceRequest(sig)
  }

  updateState(state: string, meta: unknown = null): Promise<void> {
    if (typeof state !== 'string' || state === '')
      return Promise.reject(new TypeError('updateState(state, meta): state must be a non-empty string such as "PROGRESS"'))
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

export class JobExecution implements RunningJob {
  immediate: Outcome | undefined
  private pending: Promise<Outcome> | undefined
  private readonly context: RunContext
  private readonly started = performance.now()
  private softTimer: LongTimeout | undefined
  private heldEndHooks: (() => void) | undefined

  constructor(
    private readonly task: Task,
    private readonly job: Job,
    sink: StateSink | undefined,
    /** Only when a signal receiver or a task handler listens: the common case skips them all. */
    private readonly signals: AppSignals | undefined,
    /** Hold the end handlers and signals until the worker has stored the result (releaseEndHooks). */
    private readonly holdEndHooks: boolean,
    /** The task lock held for this run (locked-run.ts), shown to the task as currentTask().lock. */
    lock?: { id: string; token: number },
  ) {
    this.context = new RunContext(job, sink, task.app)
    if (lock) this.context.lock = { id: lock.id, token: lock.token }
    if (job.softTimeLimit && job.softTimeLimit > 0)
      this.softTimer = setLongTimeout(() => this.abort('soft-time-limit'), job.softTimeLimit * 1000)
    if (signals) {
      const { beforeStart } = task.options
      if (beforeStart) runReceiver(`${job.task} beforeStart`, beforeStart, { taskId: job.id, args: job.args, kwargs: job.kwargs })
      signals.send('task_prerun', { sender: job.task, taskId: job.id, args: job.args, kwargs: job.kwargs, headers: job.headers ?? {} })
    }
    let returned: unknown
    try {
      returned = task.options.bind
        ? runWithContext(this.context, task.fn, [this.context, ...job.args])
        : runWithContext(this.context, task.fn, job.args)
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

  /** The run's lock was lost (taken over after its lease ran out, or removed): the task's AbortSignal says so. */
  lockLost(reason: Error): void {
    this.context.abortWith(reason)
  }

  abort(reason: 'revoked' | 'soft-time-limit'): void {
    this.context.abortWith(
      reason === 'soft-time-limit'
        ? new SoftTimeLimitExceeded(this.job.softTimeLimit ?? 0)
        : Object.assign(new Error('revoked'), { name: 'TaskRevokedError' }),
    )
  }

  private runtime(): number {
    return (performance.now() - this.started) / 1000
  }

  private succeeded(value: unknown): Outcome {
    this.softTimer?.clear()
    const outcome: Outcome = { status: 'success', value: value === undefined ? null : value, runtime: this.runtime() }
    if (this.signals) {
      // A result the worker cannot store fails the task with EncodeError; as
      // in Celery's trace, the hooks then announce that failure, not a
      // success. Checked only where hooks listen: otherwise the worker finds it.
      const problem = encodeProblem(outcome.value)
      if (problem) {
        const failure: Outcome = { status: 'failure', exc: encodeFailure(problem), traceback: null, runtime: outcome.runtime }
        this.endHooks(this.signals, failure, problem)
        return failure
      }
      this.endHooks(this.signals, outcome, null)
    }
    return outcome
  }

  private failed(error: unknown): Outcome {
    this.softTimer?.clear()
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
    // A symbol key: copies made with spread keep it; structured clone, v8's serializer and JSON drop it.
    ;(outcome as HoldingOutcome)[HELD_BY] = this
  }

  /** The held hooks announce `failure` instead (the slot could not hand the outcome over: unsendableOutcome). */
  failInstead(failure: Outcome, error: unknown): void {
    if (!this.heldEndHooks || !this.signals) return
    const signals = this.signals
    this.heldEndHooks = () => this.signalEnd(signals, failure, error)
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
    const handler = <T>(name: string, fn: (info: T) => unknown, info: T) => this.runHandler(signals, name, fn, info)
    switch (outcome.status) {
      case 'success':
        state = 'SUCCESS'
        retval = outcome.value
        if (onSuccess) handler('onSuccess', onSuccess, { retval, ...about })
        signals.send('task_success', { ...base, result: outcome.value })
        break
      case 'retry': {
        const reason = error instanceof RetryRequest ? (error.options.exc ?? null) : error
        tb = traceback(reason)
        if (retriesExhausted(job.retries, outcome.maxRetries, this.task.options.maxRetries)) {
          state = 'FAILURE'
          retval = reason
          if (onFailure) handler('onFailure', onFailure, { exc: reason, ...about, traceback: tb })
          signals.send('task_failure', { ...base, exception: reason, args: job.args, kwargs: job.kwargs, traceback: tb })
        } else {
          state = 'RETRY'
          if (onRetry) handler('onRetry', onRetry, { exc: reason, ...about, traceback: tb })
          signals.send('task_retry', { ...base, retries: job.retries, reason })
        }
        break
      }
      case 'failure':
        state = 'FAILURE'
        tb = outcome.traceback
        if (onFailure) handler('onFailure', onFailure, { exc: error, ...about, traceback: tb })
        signals.send('task_failure', { ...base, exception: error, args: job.args, kwargs: job.kwargs, traceback: tb })
        break
      default:
        state = outcome.status === 'ignored' ? 'IGNORED' : 'REJECTED'
    }
    // Celery skips after_return for its IGNORE_STATES: RETRY, IGNORED, REJECTED.
    if (afterReturn && (state === 'SUCCESS' || state === 'FAILURE'))
      handler('afterReturn', afterReturn, { status: state, retval, ...about, traceback: tb })
    signals.send('task_postrun', { ...base, args: job.args, kwargs: job.kwargs, retval, state })
  }

  /**
   * A task handler (onSuccess, onFailure, onRetry, afterReturn). What it
   * throws, or its promise rejects with, was raised outside the task's body:
   * logged, and sent as task_internal_error (Celery's signal for it); the
   * task's outcome stands.
   */
  private runHandler<T>(signals: AppSignals, name: string, fn: (info: T) => unknown, info: T): void {
    const report = (error: unknown): void => {
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
      console.error(`Signal handler ${fn.name || '<anonymous>'} for ${this.job.task} ${name} raised: ${message}`)
      signals.send('task_internal_error', {
        sender: this.job.task,
        taskId: this.job.id,
        args: this.job.args,
        kwargs: this.job.kwargs,
        request: this.context,
        exception: error,
        traceback: traceback(error),
      })
    }
    try {
      const returned = fn(info)
      if (isThenable(returned)) Promise.resolve(returned).catch(report)
    } catch (error) {
      report(error)
    }
  }

  private outcomeOf(error: unknown): Outcome {
    if (error instanceof RetryRequest) return this.retryOutcome(error.options)
    const predicate = taskPredicate(error)
    if (predicate?.kind === 'ignore') return { status: 'ignored', runtime: this.runtime() }
    if (predicate?.kind === 'replace') return { status: 'ignored', runtime: this.runtime(), replacedBy: predicate.signature }
    if (predicate?.kind === 'reject')
      return { status: 'rejected', requeue: predicate.requeue, reason: predicate.reason, runtime: this.runtime() }
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
export function autoretryOptions(
  task: Task,
  error: unknown,
  retries: number,
  random: () => number = Math.random,
): RetryOptions | undefined {
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

/** A run handed no delivery (an eager call): the default exchange, no key. */
const NO_DELIVERY_INFO: DeliveryInfo = Object.freeze({ exchange: '', routingKey: '', priority: null, redelivered: null }) as DeliveryInfo

/** Celery's celery.exceptions.ImproperlyConfigured, raised in the task. */
function improperlyConfigured(message: string): Error {
  return Object.assign(new Error(message), { name: 'ImproperlyConfigured', module: 'celery.exceptions' })
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
    const unknown: Outcome = {
      status: 'failure',
      exc: { type: 'NotRegistered', args: [job.task], module: 'celery.exceptions', message: job.task },
      traceback: null,
      runtime: 0,
    }
    return { immediate: unknown, outcome: Promise.resolve(unknown), abort: () => undefined, releaseEndHooks: () => undefined }
  }
  const o = task.options
  const observed = app.signals?.observingRuns || o.beforeStart || o.onSuccess || o.onFailure || o.onRetry || o.afterReturn
  const signals = observed ? (app.signals ?? NO_RECEIVERS) : undefined
  // In its run/<task> span when the process traces (docs/tracing.md); untraced, no closure per task.
  if (activeTracing()) return traceJob(job, () => startJob(app, task, job, sink, signals, holdEndHooks))
  return startJob(app, task, job, sink, signals, holdEndHooks)
}

function startJob(
  app: App,
  task: Task,
  job: Job,
  sink: StateSink | undefined,
  signals: AppSignals | undefined,
  holdEndHooks: boolean,
): RunningJob {
  // A locked task: the lock is taken first, renewed while the task runs, freed when it ends (locked-run.ts).
  if (task.options.lock) return runLocked(app, task, job, (lock) => new JobExecution(task, job, sink, signals, holdEndHooks, lock))
  return new JobExecution(task, job, sink, signals, holdEndHooks)
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function'
  )
}
