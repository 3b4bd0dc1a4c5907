// Tasks run in this process, with no broker: Celery's `Task.apply()` and its
// `task_always_eager` setting, for testing a task module. A run goes through
// the executor a worker's pool slot runs tasks with (execution/executor.ts),
// so `currentTask()`, `bind`, autoretry, Ignore and Reject, locks, the task_*
// signals and the task's handlers behave as in a worker; what a worker would
// do next (a retry, the links, a chain's next step, a chord's body) is done
// here and at once.
import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import {
  argsRepr,
  argsWith,
  canvasKind,
  chordBody,
  chordHeader,
  dumps,
  kwargsRepr,
  loads,
  tasksOf,
  type Signature,
} from '../protocol/index.js'
import { executeJob, retriesExhausted } from './execution/executor.js'
import type { Job } from './execution/jobs.js'
import type { App } from './app.js'
import type { Task } from './task.js'
import type { ApplyOptions } from './task-handle.js'
import { AsyncResult, GroupResult, type GetOptions } from './async-result.js'
import { currentTask, RetryRequest } from './task-context.js'

/** Celery's states an EagerResult can end in. */
export type EagerState = 'SUCCESS' | 'FAILURE' | 'IGNORED' | 'REJECTED' | 'REVOKED'

/** Celery's PROPAGATE_STATES: the states `get()` raises for. */
const PROPAGATE: ReadonlySet<string> = new Set(['FAILURE', 'REVOKED'])

/**
 * Celery's `EagerResult`: the result of a task that already ran here. It is an
 * AsyncResult, so code written against `delay()` works unchanged under
 * `task_always_eager` (`await r.get()`, `await r.state`), and it never asks a
 * result backend. `status` and `result` are there at once, as Celery's are.
 */
export class EagerResult<R = unknown> extends AsyncResult<R> {
  /** The previous step's result in an eager chain (Celery's `result.parent`). */
  parent: AsyncResult | GroupResult | null = null
  #state: string
  readonly #value: unknown
  readonly #traceback: string | null
  readonly #dateDone: Date

  constructor(
    id: string,
    app: App,
    state: EagerState,
    /** The return value, or for FAILURE, IGNORED and REJECTED what the task threw. */
    value: unknown,
    traceback: string | null = null,
  ) {
    super(id, app)
    this.#state = state
    this.#value = value
    this.#traceback = traceback
    this.#dateDone = new Date()
  }

  /** The state, at once (Celery's `EagerResult.status`, its `state`). */
  get status(): string {
    return this.#state
  }

  /** The return value, or the error the task threw (Celery's `EagerResult.result`). */
  get result(): unknown {
    return this.#value
  }

  override get state(): Promise<string> {
    return Promise.resolve(this.#state)
  }

  override get info(): Promise<unknown> {
    return Promise.resolve(this.#value)
  }

  override get traceback(): Promise<string | null> {
    return Promise.resolve(this.#traceback)
  }

  override get dateDone(): Promise<Date | null> {
    return Promise.resolve(this.#dateDone)
  }

  /** Always true: the task has run. */
  override async ready(): Promise<boolean> {
    return true
  }

  override async successful(): Promise<boolean> {
    return this.#state === 'SUCCESS'
  }

  override async failed(): Promise<boolean> {
    return this.#state === 'FAILURE'
  }

  /** As Celery's: only the state changes, to REVOKED (the task has run). */
  override async revoke(): Promise<void> {
    this.#state = 'REVOKED'
  }

  /** Nothing is stored, so nothing to forget. */
  override async forget(): Promise<void> {}

  /**
   * Celery's `EagerResult.get()`: the return value; after a failure it rejects
   * with the error the task threw (the error itself, its class and fields),
   * or with `propagate: false` returns it. IGNORED and REJECTED give null.
   */
  override get(options?: GetOptions & { propagate?: true }): Promise<R>
  override get(options: GetOptions): Promise<unknown>
  override async get(options: GetOptions = {}): Promise<unknown> {
    if (this.#state === 'SUCCESS') return this.#value
    if (PROPAGATE.has(this.#state)) {
      if (options.propagate === false) return this.#value
      throw this.#value instanceof Error ? this.#value : new Error(String(this.#value))
    }
    return null
  }
}

/** Celery's task_always_eager: delay(), applyAsync(), sendTask(), chain(), group() and chord() run here. */
export function isAlwaysEager(app: App): boolean {
  return app.options.conf?.task_always_eager === true
}

export interface EagerApplyOptions {
  /** The task id (Celery's task_id); a new uuid by default. */
  id?: string
  /** The run's `retries` (Celery's retries). */
  retries?: number
  /**
   * Throw the task's error from apply() itself when it fails, instead of
   * returning a FAILURE result (Celery's throw); default the app's
   * `task_eager_propagates`.
   */
  throw?: boolean
  /** Message headers beyond Celery's own, as `currentTask().headers`. */
  headers?: Record<string, unknown>
  /** Applied with the result when the task succeeds (Celery's link). */
  link?: Signature | Signature[]
  /** Applied with the task id when the task fails (Celery's link_error). */
  linkError?: Signature | Signature[]
  rootId?: string | null
  parentId?: string | null
  group?: string | null
}

/** What Celery raises when a name has no task: `NotRegistered('proj.nope')`. */
function notRegistered(name: string): Error {
  return Object.assign(new Error(name), { name: 'NotRegistered', module: 'celery.exceptions', args: [name] })
}

function maxRetriesExceeded(task: Task, job: Job): Error {
  const message = `Can't retry ${task.name}[${job.id}] args:${argsRepr(job.args)} kwargs:${kwargsRepr(job.kwargs)}`
  return Object.assign(new Error(message), { name: 'MaxRetriesExceededError', module: 'celery.exceptions', args: [message] })
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function'
  )
}

/**
 * The app as the executor sees it, with `task` in place of the registered one:
 * the same task, whose function also keeps what it throws, so that get()
 * rethrows the task's own error rather than its encoded copy.
 */
function capturingView(app: App, task: Task, box: { error?: unknown }): App {
  const keep = (error: unknown): never => {
    box.error = error
    throw error
  }
  const fn = function (this: unknown, ...args: unknown[]): unknown {
    let returned: unknown
    try {
      returned = Reflect.apply(task.fn, this, args)
    } catch (error) {
      keep(error)
    }
    return isThenable(returned) ? Promise.resolve(returned).then(undefined, keep) : returned
  }
  const view = Object.create(task, { fn: { value: fn } }) as Task
  return Object.create(app, { tasks: { value: new Map([[task.name, view]]) } }) as App
}

/** The task running in this async flow, if any: an eager call from inside a task is its child. */
function callingTask(): { id: string; rootId: string | null } | undefined {
  try {
    const ctx = currentTask()
    return { id: ctx.id, rootId: ctx.rootId }
  } catch {
    return undefined
  }
}

const asList = (sigs: Signature | Signature[] | undefined): Signature[] => (sigs === undefined ? [] : Array.isArray(sigs) ? sigs : [sigs])

/**
 * Celery's `Task.apply()`: runs `task` here, retries at once (up to its
 * limit), then the links or errbacks, and gives an EagerResult; with
 * `throw` (default `task_eager_propagates`) a failure rejects instead.
 */
export async function applyEagerly(
  app: App,
  task: Task,
  args: unknown[] = [],
  kwargs: Record<string, unknown> = {},
  options: EagerApplyOptions = {},
): Promise<EagerResult> {
  const id = options.id ?? randomUUID()
  const caller = callingTask()
  const job: Job = {
    task: task.name,
    id,
    args,
    kwargs,
    retries: options.retries ?? 0,
    rootId: options.rootId ?? caller?.rootId ?? id,
    parentId: options.parentId ?? caller?.id ?? null,
    group: options.group ?? null,
    hostname: hostname(),
    softTimeLimit: null,
  }
  if (options.headers) job.headers = options.headers
  const propagate = options.throw ?? app.options.conf?.task_eager_propagates === true
  for (;;) {
    const box: { error?: unknown } = {}
    // Held end hooks: as in Celery's trace, links and errbacks go before on_success/on_failure and the signals.
    const running = executeJob(capturingView(app, task, box), job, undefined, { holdEndHooks: true })
    try {
      const outcome = running.immediate ?? (await running.outcome)
      let state: EagerState
      let value: unknown
      let traceback: string | null = null
      switch (outcome.status) {
        case 'success':
          for (const link of asList(options.link))
            await applySignatureAsync(app, link, [outcome.value], { parentId: id, rootId: job.rootId })
          return new EagerResult(id, app, 'SUCCESS', outcome.value)
        case 'retry': {
          const reason = box.error instanceof RetryRequest ? box.error.options.exc : box.error
          if (!retriesExhausted(job.retries, outcome.maxRetries, task.options.maxRetries)) {
            // Celery's eager retry: the same task again, now, whatever its countdown or eta.
            running.releaseEndHooks()
            job.retries += 1
            continue
          }
          state = 'FAILURE'
          value = reason ?? maxRetriesExceeded(task, job)
          traceback = value instanceof Error && value.stack ? value.stack : null
          break
        }
        case 'failure':
          state = 'FAILURE'
          value =
            box.error ??
            Object.assign(new Error(outcome.exc.message), {
              name: outcome.exc.jsName ?? outcome.exc.type,
              args: outcome.exc.args,
              module: outcome.exc.module,
            })
          traceback = outcome.traceback
          break
        case 'ignored':
          state = 'IGNORED'
          value = box.error ?? null
          break
        case 'rejected':
          state = 'REJECTED'
          value = box.error ?? null
          break
        default:
          state = 'FAILURE'
          value = box.error ?? new Error(`task ended: ${outcome.status}`)
      }
      if (state === 'FAILURE') {
        for (const errback of asList(options.linkError)) await applySignatureAsync(app, errback, [id], { parentId: id, rootId: job.rootId })
      }
      const result = new EagerResult(id, app, state, value, traceback)
      // The end hooks still run (finally), as a worker's would; Celery's propagating trace skips the failure's.
      if (propagate && state === 'FAILURE') throw value
      return result
    } finally {
      running.releaseEndHooks()
    }
  }
}

/** Celery's apply_async under task_always_eager: the arguments go through the serializer first, as a worker would get them. */
export async function applyAsyncEagerly(
  app: App,
  task: Task,
  args: unknown[],
  kwargs: Record<string, unknown>,
  options: ApplyOptions,
): Promise<EagerResult> {
  const [sentArgs, sentKwargs] = loads(dumps([args, kwargs]), { integers: 'exact' }) as [unknown[], Record<string, unknown>]
  return applyEagerly(app, task, sentArgs, sentKwargs, {
    id: options.id,
    retries: options.retries,
    headers: options.headers,
    link: options.link,
    linkError: options.linkError,
    rootId: options.rootId,
    parentId: options.parentId,
    group: options.group,
  })
}

interface Lineage {
  parentId?: string | null
  rootId?: string | null
  group?: string | null
}

/**
 * A signature run here, of any kind: a task (with its own links), a group
 * (a GroupResult of its members' results, nested groups' joining it), a
 * chain (its last step's result, or its last group's), a chord (its body's).
 */
export async function applySignatureEagerly(
  app: App,
  sig: Signature,
  prepend: unknown[] = [],
  lineage: Lineage = {},
): Promise<EagerResult | GroupResult> {
  const options = sig.options ?? {}
  switch (canvasKind(sig)) {
    case 'group':
      return applyGroupEagerly(app, tasksOf(sig), prepend, typeof options.task_id === 'string' ? options.task_id : undefined, lineage)
    case 'chain':
      return applyChainEagerly(app, tasksOf(sig), prepend, lineage)
    case 'chord':
      return applyChordEagerly(app, chordHeader(sig), chordBody(sig) as Signature, prepend, lineage)
    default: {
      const task = app.tasks.get(sig.task)
      if (!task) throw notRegistered(sig.task)
      return applyEagerly(
        app,
        task,
        argsWith(sig, prepend),
        { ...(sig.kwargs ?? {}) },
        {
          id: typeof options.task_id === 'string' ? options.task_id : undefined,
          link: options.link as Signature | Signature[] | undefined,
          linkError: options.link_error as Signature | Signature[] | undefined,
          headers: options.headers as Record<string, unknown> | undefined,
          parentId: lineage.parentId,
          rootId: lineage.rootId,
          group: lineage.group,
        },
      )
    }
  }
}

/**
 * Celery's `chain.apply()`: each step with the previous step's result
 * (`get()`, so a failed step rejects the chain with its error, as Celery's
 * raises it); the last step's result, whose `parent` is the one before.
 */
export async function applyChainEagerly(
  app: App,
  steps: Signature[],
  prepend: unknown[] = [],
  lineage: Lineage = {},
): Promise<EagerResult | GroupResult> {
  if (steps.length === 0) throw new Error('chain() needs at least one signature')
  let last: EagerResult | GroupResult | undefined
  let rootId = lineage.rootId
  for (const step of steps) {
    const input = last === undefined ? prepend : [await last.get()]
    const parentId = last === undefined ? lineage.parentId : last.id
    const result = await applySignatureEagerly(app, step, input, { ...lineage, parentId, rootId })
    if (result instanceof EagerResult && last !== undefined) result.parent = last
    // Later steps share the first one's root, as a worker's chain does.
    rootId ??= callingTask()?.rootId ?? result.id
    last = result
  }
  return last!
}

/** Celery's `group.apply()`: every member, in order, under one group id. */
export async function applyGroupEagerly(
  app: App,
  members: Signature[],
  prepend: unknown[] = [],
  groupId: string = randomUUID(),
  lineage: Lineage = {},
): Promise<GroupResult> {
  const results: AsyncResult[] = []
  for (const member of members) {
    const result = await applySignatureEagerly(app, member, prepend, { ...lineage, group: groupId })
    if (result instanceof GroupResult) results.push(...result.results)
    else results.push(result)
  }
  return new GroupResult(groupId, results)
}

/** Celery's `chord.apply()`: the header as a group, then the body with its results (a failed header task rejects). */
export async function applyChordEagerly(
  app: App,
  header: Signature[],
  body: Signature,
  prepend: unknown[] = [],
  lineage: Lineage = {},
): Promise<EagerResult | GroupResult> {
  if (!body || typeof body !== 'object') throw new TypeError('chord(header, body): body must be a signature')
  const group = await applyGroupEagerly(app, header, prepend, undefined, lineage)
  const values = await group.get()
  return applySignatureEagerly(app, body, [values], lineage)
}

/**
 * A link or errback, as Celery's trace applies it: `apply_async`, which runs
 * it here under task_always_eager and otherwise sends it to the broker.
 */
async function applySignatureAsync(app: App, sig: Signature, prepend: unknown[], lineage: Lineage): Promise<void> {
  if (isAlwaysEager(app)) {
    await applySignatureEagerly(app, sig, prepend, lineage)
    return
  }
  const withPrepend = (s: Signature): Signature => ({ ...s, args: argsWith(s, prepend) })
  switch (canvasKind(sig)) {
    case 'group':
      await app.group(...tasksOf(sig).map(withPrepend))
      return
    case 'chain': {
      const [first, ...rest] = tasksOf(sig)
      if (first) await app.chain(withPrepend(first), ...rest)
      return
    }
    case 'chord':
      await app.chord(chordHeader(sig).map(withPrepend), chordBody(sig) as Signature)
      return
    default: {
      const options = sig.options ?? {}
      await app.sendTask(sig.task, argsWith(sig, prepend), sig.kwargs ?? {}, {
        id: typeof options.task_id === 'string' ? options.task_id : undefined,
        queue: typeof options.queue === 'string' ? options.queue : undefined,
        parentId: lineage.parentId,
        rootId: lineage.rootId,
      })
    }
  }
}
