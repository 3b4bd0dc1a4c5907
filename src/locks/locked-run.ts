// The extension point between a pool slot's run and the task locks: take the
// task's lock before its function runs, renew it while it runs, free it the
// moment the run ends, however it ends. What the slot cannot free (its
// process killed: hard time limit, revoke --terminate, kill -9, cold shutdown)
// the worker's main process frees (releaseLostSlotLocks, slot-pool's onLost).
import type { App, Task } from '../app/app.js'
import { encodeError, type RunningJob } from '../app/execution/executor.js'
import type { Job, Outcome } from '../app/execution/jobs.js'
import type { LockableRun } from '../app/lock-hooks.js'
import type { HeldLock } from './hold.js'
import { holderOf, LockedError, LockLostError } from './lock.js'
import { lockIdFor, parameterNames } from './lock-id.js'
import { openLockStore, type LockSettings } from './open-store.js'
import { acquireTaskLock, lockedRetryDelay } from './task-lock.js'
import { taskLabel } from '../protocol/index.js'

const settingsOf = new WeakMap<App, LockSettings>()

/** Where the app's locks live (conf.lock_url, else by broker); read once per process. */
export function lockSettings(app: App): LockSettings {
  let s = settingsOf.get(app)
  if (!s) {
    const config = app.config
    const lockUrl = app.conf.lock_url
    s = { lockUrl: typeof lockUrl === 'string' ? lockUrl : null, brokerUrl: config.brokerUrl, resultBackend: config.resultBackend ?? null }
    settingsOf.set(app, s)
  }
  return s
}

/** A store that is down: the message goes back after this pause, not at once (no hot loop). */
const UNAVAILABLE_PAUSE_MS = 1000

export function runLocked(app: App, task: Task, job: Job, start: (lock: { id: string; token: number }) => LockableRun): RunningJob {
  return new LockedRun(app, task, job, start)
}

class LockedRun implements RunningJob {
  readonly immediate = undefined
  readonly outcome: Promise<Outcome>
  private inner: LockableRun | undefined
  private pendingAbort: 'revoked' | 'soft-time-limit' | undefined
  private readonly started = performance.now()

  constructor(
    private readonly app: App,
    private readonly task: Task,
    private readonly job: Job,
    private readonly start: (lock: { id: string; token: number }) => LockableRun,
  ) {
    this.outcome = this.run()
  }

  private runtime(): number {
    return (performance.now() - this.started) / 1000
  }

  private async run(): Promise<Outcome> {
    const { job, task } = this
    const options = task.options.lock!
    const answer = await acquireTaskLock({ task: job.task, fn: task.fn, options, args: job.args, kwargs: job.kwargs, taskId: job.id, node: job.hostname, settings: lockSettings(this.app), log: (m) => console.warn(m) })
    switch (answer.kind) {
      case 'key-error':
        return { status: 'failure', exc: encodeError(answer.error), traceback: answer.error instanceof Error ? (answer.error.stack ?? null) : null, runtime: this.runtime() }
      case 'unavailable':
        console.error(`Task ${taskLabel(job.task, job.id)} not run: ${answer.error.message}; its message goes back to the queue`)
        await new Promise((r) => setTimeout(r, UNAVAILABLE_PAUSE_MS))
        return { status: 'rejected', requeue: true, reason: answer.error.message, runtime: this.runtime() }
      case 'locked': {
        const onLocked = options.onLocked ?? 'skip'
        const error = new LockedError(answer.lockId, answer.remainingMs)
        if (onLocked === 'retry') return { status: 'retry', countdown: lockedRetryDelay(options), eta: null, maxRetries: null, exc: encodeError(error), runtime: this.runtime() }
        if (onLocked === 'fail') return { status: 'failure', exc: encodeError(error), traceback: null, runtime: this.runtime() }
        // skip: Celery's Ignore (the cookbook's behaviour); the worker logs it at INFO and says why in a task-skipped event.
        return { status: 'ignored', runtime: this.runtime(), skipped: { lock: answer.lockId, leaseLeftMs: answer.remainingMs } }
      }
      case 'held':
        return this.runHolding(answer.held)
    }
  }

  private async runHolding(held: HeldLock): Promise<Outcome> {
    try {
      const inner = this.start({ id: held.id, token: held.token })
      this.inner = inner
      if (this.pendingAbort) inner.abort(this.pendingAbort)
      const onLost = () => inner.lockLost(held.lost.reason instanceof Error ? held.lost.reason : new LockLostError(held.id))
      held.lost.addEventListener('abort', onLost, { once: true })
      const outcome = inner.immediate ?? (await inner.outcome)
      held.lost.removeEventListener('abort', onLost)
      return outcome
    } finally {
      // On Redis the release is under way ahead of whatever this process sends the store next: the outcome goes without waiting for its answer.
      await held.letGo()
    }
  }

  abort(reason: 'revoked' | 'soft-time-limit'): void {
    if (this.inner) this.inner.abort(reason)
    else this.pendingAbort ??= reason
  }

  releaseEndHooks(): void {
    this.inner?.releaseEndHooks()
  }
}

/**
 * In the worker's main process: frees the locks a pool process or thread held
 * when it died or was terminated (its holder is `<node>:<pid>`, a thread's
 * `<node>:<pid>/<thread>`), so the next run of that key starts at once
 * rather than when the lease runs out.
 */
export async function releaseLostSlotLocks(app: App, where: { brokerUrl: string; resultBackend: string | null }, node: string, pid: number, log?: (message: string) => void, threadId?: number): Promise<void> {
  if ((pid === process.pid && threadId === undefined) || ![...app.tasks.values()].some((t) => t.options.lock)) return
  try {
    const lockUrl = app.conf.lock_url
    const freed = await (await openLockStore({ ...where, lockUrl: typeof lockUrl === 'string' ? lockUrl : null })).releaseHolder(holderOf({ node, pid, thread: threadId }))
    if (freed.length) log?.(`Freed ${freed.length} lock(s) held by lost pool ${threadId === undefined ? `process ${pid}` : `thread ${threadId}`}: ${freed.join(', ')}`)
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
export async function heldLockOf(app: App, run: { id: string; name: string; args: readonly unknown[]; kwargs: Record<string, unknown> }): Promise<{ id: string; token: number; holder: string; lease_left: number } | null> {
  const task = app.tasks.get(run.name)
  const options = task?.options.lock
  if (!task || !options) return null
  try {
    const id = lockIdFor(run.name, options, run.args, run.kwargs, Array.isArray(options.key) ? parameterNames(task.fn) : [])
    const held = await (await openLockStore(lockSettings(app))).get(id)
    if (!held || held.taskId !== run.id) return null
    return { id, token: held.token, holder: held.holder, lease_left: held.leftMs / 1000 }
  } catch {
    return null
  }
}
