// Between reservations and outcomes: a reserved request goes to the pool. It
// is checked once more when it would start (its delivery, a revoke, its
// expiry, as Celery's Request.revoked()), started (active, the early ack,
// task-started), and given to the pool as a job; how its run ends goes to
// outcomes. celery.chord_unlock runs here, beside the backend and the broker,
// never in the pool.
import type { Task } from '../../app/index.js'
import { setRequestFields, type Job, type Outcome } from '../../app/index.js'
import { taskLabel } from '../../protocol/index.js'
import type { Placement } from '../pools/pool.js'
import { unlockChord } from './chord-parts.js'
import type { Holdings } from './holdings.js'
import type { TaskLimits } from './limits.js'
import type { Outcomes, RunEnd } from './outcomes.js'
import type { Request } from './request.js'
import type { RunnerOptions } from './runner-options.js'
import type { Settler } from './settler.js'

export class HandOff {
  /** One function for every request, not a closure per task. */
  private readonly pidOfTask = (taskId: string): number | undefined => this.o.pool.slots().find((s) => s.taskId === taskId)?.pid

  constructor(
    private readonly o: RunnerOptions,
    private readonly holdings: Holdings,
    private readonly limits: TaskLimits,
    private readonly settler: Settler,
    private readonly outcomes: Outcomes,
    /** The next reserved request may go to the pool. */
    private readonly next: () => void,
  ) {}

  /**
   * `placing`: it goes to Pool.place, staged (reserved) until the pool starts
   * it, active from then. Returns a promise only when the run does not end
   * within the call.
   */
  start(request: Request, placing: boolean): void | Promise<void> {
    const m = request.message
    if (this.holdings.dropIfTakenBack(request)) {
      this.holdings.wakeIdleWaiters()
      return
    }
    if (this.o.revoked.has(m.id)) return this.discardAtStart(request, 'revoked')
    // Checked again when it would start, as Celery's Request.revoked() does: a task that waited
    // behind a busy pool, a rate limit or its ETA may have expired meanwhile.
    if (m.expires && Date.parse(m.expires) <= Date.now()) return this.discardAtStart(request, 'expired')
    if (m.task === 'celery.chord_unlock') return this.unlockChord(request)
    if (placing) {
      this.holdings.staged.add(request)
      return this.run(request, this.placementOf(request))
    }
    const task = this.begin(request)
    if (task.options.trackStarted) {
      request.workerPid = this.o.pool.slots()[0]?.pid ?? process.pid
      return this.outcomes
        .store(request, 'STARTED', { pid: request.workerPid, hostname: this.o.hostname }, null)
        .then(() => this.run(request))
    }
    return this.run(request)
  }

  /** The request starts: active from now, acked now unless late, task-started sent. */
  private begin(request: Request): Task {
    const m = request.message
    const task = this.o.app.tasks.get(m.task)!
    this.holdings.active.set(m.id, request)
    request.timeStart = Date.now() / 1000
    void this.settler.settle(request, 'started')
    if (this.o.events.taskEvents) this.o.events.sendTask('task-started', { uuid: m.id })
    return task
  }

  /** What the pool tells about a staged request. */
  private placementOf(request: Request): Placement {
    return {
      started: () => {
        this.holdings.staged.delete(request)
        this.begin(request)
      },
      returned: () => {
        this.holdings.staged.delete(request)
        if (this.holdings.dropIfTakenBack(request)) {
          this.holdings.wakeIdleWaiters()
          return
        }
        // First in line again, to go out again (or back to the broker at shutdown).
        this.holdings.waiting.unshift(request)
        queueMicrotask(this.next)
      },
    }
  }

  /** A reserved task revoked or expired by the time it would start: it never runs, and may be the last one a shutdown waits for. */
  private async discardAtStart(request: Request, reason: 'revoked' | 'expired'): Promise<void> {
    await this.outcomes.discardRevoked(request, reason)
    this.next()
  }

  private run(request: Request, placement?: Placement): void | Promise<void> {
    const m = request.message
    const limits = this.limits.timeLimitsOf(request)
    const job: Job = {
      id: m.id,
      task: m.task,
      args: m.args,
      kwargs: m.kwargs,
      retries: m.retries,
      rootId: m.rootId,
      parentId: m.parentId,
      group: m.group,
      hostname: this.o.hostname,
      headers: customHeaders(request.delivery.properties.headers),
      softTimeLimit: limits.soft,
    }
    setRequestFields(job, request, this.o.transport?.kind)
    // The run span's celery.hostname (src/tracing/); only beside a sender's own headers, so a plain job stays as small.
    if (job.headers && m.origin) job.origin = m.origin
    let running: RunEnd | Promise<Outcome>
    try {
      running = placement
        ? this.o.pool.place!(job, limits.hard, this.outcomes.storeState, placement)
        : this.o.pool.run(job, limits.hard, this.outcomes.storeState)
      request.pidProbe = this.pidOfTask
    } catch (error) {
      // The pool could not take it at all: rejected, not requeued, or it would come back and fail again.
      if (placement) this.holdings.staged.delete(request)
      this.o.log.error(`Pool could not run ${m.task}[${m.id}]: ${(error as Error).message}; rejected, not requeued`)
      running = { status: 'hand-off-failed', reason: `the pool could not take it: ${(error as Error).message}`, runtime: 0 }
    }
    if (placement && running instanceof Promise) {
      return running.then(
        (outcome) => this.outcomes.ended(request, outcome),
        (error: unknown) => {
          // A pool that could not place it (closing): it waits, to go back to the broker.
          if (!this.holdings.staged.has(request)) return this.outcomes.ended(request, this.lost(request, error))
          this.holdings.staged.delete(request)
          this.holdings.waiting.unshift(request)
        },
      )
    }
    if (running instanceof Promise) {
      return running.then(
        (outcome) => this.outcomes.ended(request, outcome),
        (error: unknown) => this.outcomes.ended(request, this.lost(request, error)),
      )
    }
    return this.outcomes.ended(request, running)
  }

  /** celery.chord_unlock: checks the chord's parts and runs its body once all are ready, or retries. */
  private async unlockChord(request: Request): Promise<void> {
    this.begin(request)
    const started = Date.now()
    let outcome: Outcome
    try {
      const next = await unlockChord(this.o, request)
      outcome =
        next.status === 'retry'
          ? { status: 'retry', countdown: next.countdown, eta: null, maxRetries: null, exc: null, runtime: (Date.now() - started) / 1000 }
          : { status: 'ignored', runtime: (Date.now() - started) / 1000 }
    } catch (error) {
      const e = error as Error
      outcome = {
        status: 'failure',
        exc: { type: e.name || 'Error', args: [e.message], module: 'builtins', message: e.message },
        traceback: e.stack ?? null,
        runtime: (Date.now() - started) / 1000,
      }
    }
    return this.outcomes.ended(request, outcome)
  }

  private lost(request: Request, error: unknown): Outcome {
    this.o.log.error(`Pool could not run ${taskLabel(request.message.task, request.message.id)}: ${(error as Error).message}`)
    return { status: 'killed', reason: 'worker-lost', signal: null, runtime: 0 }
  }
}

/** The task-message headers protocol v2 defines (and kombu's compression); the rest are a sender's own. */
const CELERY_HEADERS = new Set([
  'lang',
  'task',
  'id',
  'shadow',
  'eta',
  'expires',
  'group',
  'group_index',
  'retries',
  'timelimit',
  'root_id',
  'parent_id',
  'argsrepr',
  'kwargsrepr',
  'origin',
  'ignore_result',
  'replaced_task_nesting',
  'stamped_headers',
  'stamps',
  'compression',
])

/** A sender's own headers, or undefined when there are none (the usual case, kept free of an object per task). */
function customHeaders(headers: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  let custom: Record<string, unknown> | undefined
  for (const key in headers) {
    if (CELERY_HEADERS.has(key)) continue
    ;(custom ??= {})[key] = headers[key]
  }
  return custom
}
