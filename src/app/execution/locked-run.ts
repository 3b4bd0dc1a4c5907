// A task with the option `lock`, run: take the task's lock before its
// function runs, renew it while it runs, free it the moment the run ends,
// however it ends; a run that finds the lock held is skipped, retried or
// failed as the option says. Eager runs and pool slots alike come through
// here (executeJob). What a slot cannot free (its process killed: hard time
// limit, revoke --terminate, kill -9, cold shutdown) the worker's main process
// frees (app/locking.ts's releaseLostSlotLocks, slot-pool's onLost).
import type { App } from '../app.js'
import type { Task } from '../task.js'
import { encodeError, type RunningJob } from './executor.js'
import type { Job, Outcome } from './jobs.js'
import { acquireTaskLock, LockedError, LockLostError, lockedRetryDelay, type HeldLock } from '../../locks/index.js'
import { lockSettings } from '../locking.js'
import { taskLabel } from '../../protocol/index.js'

/** A run that can be told its lock is gone (the executor's JobExecution). */
export interface LockableRun extends RunningJob {
  lockLost(reason: Error): void
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
    const answer = await acquireTaskLock({
      task: job.task,
      fn: task.fn,
      options,
      args: job.args,
      kwargs: job.kwargs,
      taskId: job.id,
      node: job.hostname,
      settings: lockSettings(this.app),
      log: (m) => console.warn(m),
    })
    switch (answer.kind) {
      case 'key-error':
        return {
          status: 'failure',
          exc: encodeError(answer.error),
          traceback: answer.error instanceof Error ? (answer.error.stack ?? null) : null,
          runtime: this.runtime(),
        }
      case 'unavailable':
        console.error(`Task ${taskLabel(job.task, job.id)} not run: ${answer.error.message}; its message goes back to the queue`)
        await new Promise((r) => setTimeout(r, UNAVAILABLE_PAUSE_MS))
        return { status: 'rejected', requeue: true, reason: answer.error.message, runtime: this.runtime() }
      case 'locked': {
        const onLocked = options.onLocked ?? 'skip'
        const error = new LockedError(answer.lockId, answer.remainingMs)
        if (onLocked === 'retry')
          return {
            status: 'retry',
            countdown: lockedRetryDelay(options),
            eta: null,
            maxRetries: null,
            exc: encodeError(error),
            runtime: this.runtime(),
          }
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
