// The third room of the task path: how a run ended, recorded as Celery's
// trace and Request record it (celery/app/trace.py, celery/worker/request.py):
// the result stored (unless ignored), the log line, events and signals, the
// follow-ups sent (callbacks, the chain's rest, errbacks, a retry's new copy),
// then the message settled as its fate says (settlement.ts). The ends of tasks
// that never ran (unregistered, revoked, expired) are recorded here too.
import { encodeError, encodeFailure, retriesExhausted } from '../../app/index.js'
import type { EncodedException, Outcome } from '../../app/index.js'
import { clearOnceMark } from '../../app/index.js'
import { dumps, EncodeError, encodeException, exceptionRepr, saferepr, type StateName } from '../../protocol/index.js'
import { escapeControl, taskLabel } from '../../protocol/index.js'
import { failChainRest } from './chord-parts.js'
import { republishForRetry, sendCallbacks, sendErrbacks, sendReplacement } from './follow-ups.js'
import { DedupReceipt } from './cluster/dedup-receipt.js'
import type { Holdings } from './holdings.js'
import type { TaskLimits } from './limits.js'
import type { Request } from './request.js'
import { isChordPart, ResultStore } from './result-store.js'
import { keepFailedMessage } from './keep-failed.js'
import type { RunnerOptions } from './runner-options.js'
import type { Fate } from './settlement.js'
import type { Settler } from './settler.js'
import { withCarriedContext } from '../../tracing/index.js'

const DEFAULT_RETRY_DELAY = 180

/** How a run ended: the pool's outcome, or the pool could not take the job at all. */
export type RunEnd = Outcome | { status: 'hand-off-failed'; reason: string; runtime: number; endHooks?: undefined; trace?: undefined }

type Unsuccessful = Exclude<RunEnd, { status: 'success' }>

/** The fate a run's end was recorded with (null: not recorded, handed back by a cold shutdown); a promise while it is being recorded. */
type Recorded = Fate | null | Promise<Fate | null>

export class Outcomes {
  readonly total: Record<string, number> = {}
  processed = 0
  /** Told after each run is over (the concurrency gate frees the run's slot). */
  afterRun?: (request: Request) => void
  private readonly results: ResultStore
  /** The `tsq_dedup` header's side of the task path (dedup-receipt.ts). */
  readonly dedup: DedupReceipt

  constructor(
    private readonly o: RunnerOptions,
    private readonly holdings: Holdings,
    private readonly limits: TaskLimits,
    private readonly settler: Settler,
    /** The next reserved request may go to the pool (a run's end freed its slot). */
    private readonly next: () => void,
  ) {
    this.results = new ResultStore(o)
    this.dedup = new DedupReceipt(o, holdings, (request) => this.discardRevoked(request, 'deduplicated'))
  }

  /** A running task's updateState(): stored as Celery's store_result stores it, whatever ignore_result says, one after another. */
  readonly storeState = (taskId: string, state: string, meta: unknown): Promise<void> => {
    const request = this.holdings.active.get(taskId)
    if (!request) return Promise.resolve()
    const write = (request.stateWrites ?? Promise.resolve()).then(() => this.results.store(request, state, meta, null))
    // A meta that cannot be encoded fails its own updateState(), not the task's end.
    request.stateWrites = write.catch((error: unknown) => {
      this.o.log.error(`Could not store the ${state} state of ${taskLabel(request.message.task, taskId)}: ${(error as Error).message}`)
    })
    return write
  }

  store(request: Request, status: StateName, result: unknown, traceback: string | null): Promise<void> {
    return this.results.store(request, status, result, traceback)
  }

  /**
   * A run ended: recorded, then settled as the fate it was recorded with,
   * then released. Returns a promise only when something must be waited for
   * (a result to store, follow-ups to send): a run that ends within the call
   * is recorded and acked without one.
   */
  ended(request: Request, end: RunEnd): void | Promise<void> {
    // A traced run: the follow-ups it sends are children of its run span (src/tracing/).
    if (end.trace) return withCarriedContext(end.trace, () => this.endedNow(request, end))
    return this.endedNow(request, end)
  }

  private endedNow(request: Request, end: RunEnd): void | Promise<void> {
    if (end.endHooks) request.endHooksHeld = true
    // The end state must land after every updateState() store, or a late PROGRESS would hide it.
    if (request.stateWrites)
      return this.settleWhenRecorded(
        request,
        request.stateWrites.then(() => this.recordEnd(request, end)),
      )
    let recorded: Recorded
    try {
      recorded = this.recordEnd(request, end)
    } catch (error) {
      recorded = Promise.reject(error)
    }
    if (recorded instanceof Promise) return this.settleWhenRecorded(request, recorded)
    this.settleAndRelease(request, recorded)
  }

  /** Waits for the end to be recorded: one that could not be goes back to the queue for another run. */
  private async settleWhenRecorded(request: Request, recording: Promise<Fate | null>): Promise<void> {
    let fate: Fate | null
    try {
      fate = await recording
    } catch (error) {
      this.o.log.error(
        `Could not record the outcome of ${taskLabel(request.message.task, request.message.id)}: ${(error as Error).message}`,
      )
      fate = 'not-recorded'
    }
    this.settleAndRelease(request, fate)
  }

  /** The one place a run's end is settled (null: handed back by a cold shutdown already), then released. */
  private settleAndRelease(request: Request, fate: Fate | null): void {
    if (fate) void this.settler.settle(request, fate)
    this.release(request)
  }

  /** The run is over: counted, its slot's held end hooks run, and the next reserved request may go. */
  private release(request: Request): void {
    const m = request.message
    // A redelivered copy (after a connection loss) may run under the same id meanwhile.
    if (this.holdings.active.get(m.id) === request) this.holdings.active.delete(m.id)
    this.total[m.task] = (this.total[m.task] ?? 0) + 1
    this.processed += 1
    this.o.onTaskDone?.()
    this.afterRun?.(request)
    // Before next(): the slot runs the held hooks before any task sent to it next.
    if (request.endHooksHeld) this.o.pool.afterStored(m.id)
    this.holdings.wakeIdleWaiters()
    this.next()
  }

  /**
   * A task with the `once` option, or a simple-mode dedup id: its mark goes before its end is stored,
   * so a sender told of the end may send again.
   */
  private recordEnd(request: Request, end: RunEnd): Recorded {
    const marked = this.o.app.tasks.get(request.name)?.options.once || this.dedup.freesAtEnd(request)
    const clearing = marked && this.endsTask(request, end) ? this.clearMarks(request) : undefined
    if (clearing) return clearing.then(() => this.record(request, end))
    return this.record(request, end)
  }

  /** Whether this end ends the task: not when a retry or a requeue leaves it queued. */
  private endsTask(request: Request, end: RunEnd): boolean {
    if (request.restored) return false
    const fate = this.fateOf(request, end)
    return fate !== 'retried' && this.settler.settlementOf(request, fate) !== 'requeue'
  }

  private fateOf(request: Request, end: RunEnd): Fate {
    switch (end.status) {
      case 'success':
        return 'succeeded'
      case 'failure':
        return 'failed'
      case 'retry':
        return this.retriesExhausted(request, end) ? 'failed' : 'retried'
      case 'ignored':
        return 'ignored'
      case 'rejected':
        return end.requeue ? 'rejected-requeue' : 'rejected'
      case 'hand-off-failed':
        return 'pool-hand-off-failed'
      case 'killed':
        return end.reason === 'time-limit' ? 'timed-out' : end.reason === 'terminated' ? 'revoked' : 'worker-lost'
    }
  }

  private retriesExhausted(request: Request, end: Extract<Outcome, { status: 'retry' }>): boolean {
    return retriesExhausted(request.message.retries, end.maxRetries, this.o.app.tasks.get(request.name)?.options.maxRetries)
  }

  private clearMarks(request: Request): Promise<void> | undefined {
    const once = this.clearOnce(request)
    const dedup = this.dedup.release(request)
    return once && dedup ? Promise.all([once, dedup]).then(() => undefined) : (once ?? dedup)
  }

  private clearOnce(request: Request): Promise<void> | undefined {
    const m = request.message
    return clearOnceMark(this.o.app, { id: m.id, task: m.task, args: m.args, kwargs: m.kwargs }, (line) => this.o.log.warning(line))
  }

  /** Returns a promise only when something must be waited for (a result to store, callbacks to send). */
  private record(request: Request, end: RunEnd): Recorded {
    const m = request.message
    if (request.restored) {
      this.o.events.sendTask('task-cancelled', { uuid: m.id })
      return null
    }
    const ignoreResult = m.ignoreResult || this.o.app.tasks.get(m.task)?.options.ignoreResult === true
    // Celery's handle_error_state: a task that ignores its result stores its errors only under task_store_errors_even_if_ignored.
    if (end.status !== 'success')
      return this.recordUnsuccessful(request, end, ignoreResult && this.o.app.conf.task_store_errors_even_if_ignored !== true)
    if (this.o.log.enabled('INFO'))
      this.o.log.info(`Task ${taskLabel(m.task, m.id)} succeeded in ${end.runtime.toFixed(6)}s: ${saferepr(end.value)}`)
    const storing = (!ignoreResult && !!this.o.backend) || isChordPart(m)
    const following = !!(m.embed.callbacks?.length || m.embed.chain?.length)
    if (storing || following) return this.recordSuccess(request, end, !ignoreResult, following)
    this.sendSucceededEvent(request, end)
    return 'succeeded'
  }

  /**
   * The stored result first, then the event, then callbacks, then the ack, as
   * Celery orders them. A return value JSON cannot carry fails the task with
   * kombu's EncodeError, as Celery's trace does; requeued, it would fail the
   * same way for ever.
   */
  private async recordSuccess(
    request: Request,
    end: Extract<Outcome, { status: 'success' }>,
    keepResult: boolean,
    following: boolean,
  ): Promise<Fate> {
    try {
      await this.results.storeEnd(request, 'SUCCESS', end.value, null, keepResult)
      this.sendSucceededEvent(request, end)
      if (following) await sendCallbacks(this.o, request, end.value)
    } catch (error) {
      if (!(error instanceof EncodeError)) throw error
      const m = request.message
      this.o.log.error(`Task ${taskLabel(m.task, m.id)} raised unexpected: EncodeError(${error.reason})`)
      await this.fail(request, encodeFailure(error), null, !keepResult)
      return 'failed'
    }
    return 'succeeded'
  }

  private sendSucceededEvent(request: Request, end: Extract<Outcome, { status: 'success' }>): void {
    // saferepr of a large result is not free: only when someone listens.
    if (this.o.events.taskEvents)
      this.o.events.sendTask('task-succeeded', { uuid: request.message.id, result: saferepr(end.value), runtime: end.runtime })
  }

  private async recordUnsuccessful(request: Request, end: Unsuccessful, ignoreResult: boolean): Promise<Fate> {
    const m = request.message
    switch (end.status) {
      case 'failure':
        // The traceback on the lines after, as Celery logs exc_info (`tsq logtool errors` prints them whole).
        this.o.log.error(
          `Task ${taskLabel(m.task, m.id)} raised unexpected: ${excRepr(end.exc)}${end.traceback ? `\n${end.traceback}` : ''}`,
        )
        await this.fail(request, end.exc, end.traceback, ignoreResult)
        return 'failed'
      case 'retry':
        return this.retry(request, end, ignoreResult)
      case 'ignored':
        return this.recordIgnored(request, end, ignoreResult)
      case 'rejected':
        this.o.log.warning(`Task ${taskLabel(m.task, m.id)} reject requeue=${end.requeue ? 'True' : 'False'}: ${end.reason ?? 'None'}`)
        // After an early ack there is nothing left to reject, as in Celery.
        if (!request.settled) this.o.events.sendTask('task-rejected', { uuid: m.id, requeue: end.requeue })
        return end.requeue ? 'rejected-requeue' : 'rejected'
      case 'hand-off-failed':
        if (!request.settled) this.o.events.sendTask('task-rejected', { uuid: m.id, requeue: false })
        return 'pool-hand-off-failed'
      case 'killed':
        return this.recordKilled(request, end, ignoreResult)
    }
  }

  private async recordIgnored(request: Request, end: Extract<Outcome, { status: 'ignored' }>, ignoreResult: boolean): Promise<Fate> {
    const m = request.message
    if (end.replacedBy) {
      // replace(sig): the replacement goes out in the task's place, as Celery's sig.delay() before its Ignore.
      // It has this task's id and may reach this worker at once: the held hooks (nothing is stored for
      // an ignored run) are released first, and the copy is not taken for a duplicate of this one.
      if (request.endHooksHeld) {
        request.endHooksHeld = false
        this.o.pool.afterStored(m.id)
      }
      request.replaced = true
      try {
        await sendReplacement(this.o, request, end.replacedBy as Parameters<typeof sendReplacement>[2])
      } catch (error) {
        const exc = encodeError(error)
        this.o.log.error(`Task ${taskLabel(m.task, m.id)} raised unexpected: ${excRepr(exc)}`)
        await this.fail(request, exc, (error as Error).stack ?? null, ignoreResult)
        return 'failed'
      }
    }
    if (end.skipped) {
      // Celery sends no event for an Ignore, so a skipped run would look like one still running. A custom
      // task event ends it: Celery's events.State (and so Flower and `celery events`) takes an unknown
      // task-* event's type as the task's state (SKIPPED).
      this.o.events.sendTask('task-skipped', {
        uuid: m.id,
        reason: 'locked',
        lock: end.skipped.lock,
        lease_left: end.skipped.leaseLeftMs / 1000,
      })
    }
    if (this.o.log.enabled('INFO')) this.o.log.info(`Task ${taskLabel(m.task, m.id)} ignored`)
    return 'ignored'
  }

  private async recordKilled(request: Request, end: Extract<Outcome, { status: 'killed' }>, ignoreResult: boolean): Promise<Fate> {
    const m = request.message
    if (end.reason === 'time-limit') {
      const hard = this.limits.timeLimitsOf(request).hard ?? 0
      const exc: EncodedException = { type: 'TimeLimitExceeded', args: [hard], module: 'celery.exceptions', message: String(hard) }
      await this.fail(request, exc, null, ignoreResult)
      return 'timed-out'
    }
    if (end.reason === 'terminated') {
      this.o.log.info(`Terminating ${escapeControl(m.id)} (${end.signal ?? 'SIGTERM'})`)
      await this.results.storeEnd(
        request,
        'REVOKED',
        { exc_type: 'TaskRevokedError', exc_message: ['terminated'], exc_module: 'celery.exceptions' },
        null,
        true,
      )
      this.o.events.sendTask('task-revoked', { uuid: m.id, terminated: true, signum: signum(end.signal), expired: false })
      this.signalRevoked(request, true, signum(end.signal), false)
      return 'revoked'
    }
    if (this.settler.settlementOf(request, 'worker-lost') === 'requeue') {
      // reject_on_worker_lost under a late ack: the message goes back for another try (at-least-once).
      this.o.log.error(`Process running ${taskLabel(m.task, m.id)} was lost; the task is requeued`)
    } else {
      // Celery's default (reject_on_worker_lost False), or an early ack: the task fails with WorkerLostError.
      const sig = end.signal
      const text = sig ? `Worker exited prematurely: signal ${signum(sig) ?? sig} (${sig}).` : 'Worker exited prematurely.'
      this.o.log.error(`Task handler raised error: WorkerLostError('${text}')`)
      await this.fail(request, { type: 'WorkerLostError', args: [text], module: 'billiard.exceptions', message: text }, null, ignoreResult)
    }
    return 'worker-lost'
  }

  private async fail(request: Request, exc: EncodedException, traceback: string | null, ignoreResult: boolean): Promise<void> {
    const m = request.message
    await keepFailedMessage(this.o, request, exc, excRepr(exc))
    const result = encodeException(exc.type, serializableArgs(exc.args), exc.module, exc.jsName)
    await this.results.storeEnd(request, 'FAILURE', result, traceback, !ignoreResult)
    this.o.events.sendTask('task-failed', { uuid: m.id, exception: excRepr(exc), traceback })
    // The chain after it fails too (and a chord it ends a header part of), as Celery's mark_as_failure.
    if (m.embed.chain?.length)
      await failChainRest(this.o, request, result, traceback).catch((e: Error) =>
        this.o.log.error(`Task ${taskLabel(m.task, m.id)}: its chain's failure was not recorded: ${e.message}`),
      )
    await sendErrbacks(this.o, request, (task, e) => this.o.log.error(`errback ${escapeControl(task)} not sent: ${e.message}`), {
      exc,
      traceback,
    })
  }

  private async retry(request: Request, end: Extract<Outcome, { status: 'retry' }>, ignoreResult: boolean): Promise<Fate> {
    const m = request.message
    const task = this.o.app.tasks.get(m.task)
    if (this.retriesExhausted(request, end)) {
      const exc = end.exc ?? {
        type: 'MaxRetriesExceededError',
        args: [`Can't retry ${m.task}[${m.id}] args:${m.argsrepr} kwargs:${m.kwargsrepr}`],
        module: 'celery.exceptions',
        message: '',
      }
      // As Celery's trace logs the error retry() raises past the limit; silent, the run just vanished from the log.
      this.o.log.error(`Task ${taskLabel(m.task, m.id)} raised unexpected: ${excRepr(exc)}`)
      await this.fail(request, exc, null, ignoreResult)
      return 'failed'
    }
    const countdown = end.countdown ?? task?.options.defaultRetryDelay ?? DEFAULT_RETRY_DELAY
    const eta = end.eta ?? new Date(Date.now() + countdown * 1000).toISOString()
    await republishForRetry(this.o, request, eta)
    const exc = end.exc ?? {
      type: 'Retry',
      args: [`Retry in ${countdown}s`],
      module: 'celery.exceptions',
      message: `Retry in ${countdown}s`,
    }
    this.o.log.info(`Task ${taskLabel(m.task, m.id)} retry: ${retryText(end, countdown)}`)
    if (!ignoreResult)
      await this.results.store(request, 'RETRY', encodeException(exc.type, serializableArgs(exc.args), exc.module, exc.jsName), null)
    this.o.events.sendTask('task-retried', { uuid: m.id, exception: excRepr(exc), traceback: null })
    return 'retried'
  }

  /** Celery's on_unknown_task: logged, rejected, and stored as a NotRegistered failure. */
  discardUnregistered(request: Request): Promise<void> {
    return this.discarding(this.recordUnregistered(request))
  }

  /** Celery's _announce_revoked for a task that never ran: revoked, or expired, on arrival or when it would start; or a dedup's duplicate. */
  discardRevoked(request: Request, reason: 'revoked' | 'expired' | 'deduplicated'): Promise<void> {
    return this.discarding(this.recordRevoked(request, reason))
  }

  /** Counted until recorded, so idle() (a shutdown) waits for a discard as for a run. */
  private async discarding(recording: Promise<void>): Promise<void> {
    this.holdings.discarding += 1
    try {
      await recording
    } finally {
      this.holdings.discarding -= 1
      this.holdings.wakeIdleWaiters()
    }
  }

  private async recordUnregistered(request: Request): Promise<void> {
    const name = request.name
    this.o.log.error(`Received unregistered task of type '${escapeControl(name)}'.\nThe message has been ignored and discarded.`)
    if (this.o.app.signals.has('task_unknown')) {
      const exc = Object.assign(new Error(`'${name}'`), { name: 'NotRegistered' })
      this.o.app.signals.send('task_unknown', {
        sender: this.o.hostname,
        name,
        id: request.id,
        message: { headers: request.delivery.properties.headers, body: request.delivery.body },
        exc,
      })
    }
    await this.settler.settle(request, 'unregistered')
    // Kept too: once the task is deployed, `tsq failed retry` sends it again.
    await keepFailedMessage(
      this.o,
      request,
      { type: 'NotRegistered', args: [name], module: 'celery.exceptions', message: name },
      `NotRegistered('${name}')`,
    )
    await this.results.store(request, 'FAILURE', { exc_type: 'NotRegistered', exc_message: [name], exc_module: 'celery.exceptions' }, null)
    this.o.events.sendTask('task-failed', { uuid: request.id, exception: `NotRegistered('${name}')` })
  }

  private async recordRevoked(request: Request, reason: 'revoked' | 'expired' | 'deduplicated'): Promise<void> {
    this.o.log.info(`Discarding revoked task: ${taskLabel(request.name, request.id)}${reason === 'revoked' ? '' : ` (${reason})`}`)
    // A duplicate stands for no id: what it would clear is another task's.
    if (reason !== 'deduplicated') await this.clearMarks(request)
    await this.settler.settle(request, 'revoked')
    await this.results.storeEnd(
      request,
      'REVOKED',
      { exc_type: 'TaskRevokedError', exc_message: [reason], exc_module: 'celery.exceptions' },
      null,
      true,
    )
    this.o.events.sendTask('task-revoked', { uuid: request.id, terminated: false, signum: null, expired: reason === 'expired' })
    this.signalRevoked(request, false, null, reason === 'expired')
  }

  private signalRevoked(request: Request, terminated: boolean, signum: number | null, expired: boolean): void {
    if (this.o.app.signals.has('task_revoked'))
      this.o.app.signals.send('task_revoked', { sender: request.name, request: request.info(), terminated, signum, expired })
  }
}

/** Celery's ensure_serializable: an exception argument JSON cannot carry is stored as its repr. */
function serializableArgs(args: unknown[]): unknown[] {
  return args.map((arg) => {
    try {
      dumps(arg)
      return arg
    } catch {
      return saferepr(arg)
    }
  })
}

/**
 * str() of Celery's Retry, as its log line shows it: `Retry in 1s:
 * ValueError('x')`, with the error that caused it; `Retry at <eta>` when the
 * retry named a time rather than a countdown.
 */
function retryText(end: Extract<Outcome, { status: 'retry' }>, countdown: number): string {
  // Python's str(datetime): a space between date and time, and the offset written out.
  const when = end.eta ? `at ${end.eta.replace('T', ' ').replace(/Z$/, '+00:00')}` : `in ${countdown}s`
  return end.exc ? `Retry ${when}: ${excRepr(end.exc)}` : `Retry ${when}`
}

/** `ValueError('boom')`, as Celery's events and logs show an exception. */
function excRepr(exc: EncodedException): string {
  // kombu's EncodeError holds its cause, stored as the cause's repr: `EncodeError(TypeError('...'))`.
  if (exc.type === 'EncodeError' && exc.module === 'kombu.exceptions' && typeof exc.args[0] === 'string')
    return `EncodeError(${exc.args[0]})`
  return exceptionRepr({ exc_type: exc.type, exc_message: exc.args, exc_module: exc.module })
}

const SIGNUMS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGKILL: 9, SIGUSR1: 10, SIGUSR2: 12, SIGTERM: 15 }

function signum(signal: string | null): number | null {
  if (!signal) return null
  if (/^\d+$/.test(signal)) return Number(signal)
  return SIGNUMS[signal] ?? null
}
