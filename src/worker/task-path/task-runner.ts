// From a delivered message to a stored result: Celery's strategy
// (celery/worker/strategy.py) and request handling (celery/worker/request.py):
// reject what cannot be read, report unknown tasks, honour revokes, expiry,
// ETA and rate limits, run in the pool, store the outcome, send the events,
// follow callbacks and chains, and ack or requeue as the outcome decides.
import type { App, Task } from '../../app/app.js'
import type { ResultBackend } from '../../app/backends/index.js'
import { ContentDisallowedError, DEFAULT_MESSAGE_LIMITS, MessageLimitError, SecurityError, decodeTaskMessage, sizeError, dumps, pyRepr, type BodyDecoder, EncodeError, resultMetaValue, rpcResultValue, serialize, exceptionRepr, saferepr, type ExtendedResultFields, type StateName, type TaskRequest, type TaskState } from '../../protocol/index.js'
import type { Delivery, Transport } from '../../transport/index.js'
import type { EventDispatcher } from '../events.js'
import { failChainRest, republishForRetry, returnChordPart, sendCallbacks, sendErrbacks, sendReplacement, unlockChord } from './follow-ups.js'
import type { LimitedSet } from '../limited-set.js'
import type { Logger } from '../../app/logger.js'
import { encodeError, encodeFailure, retriesExhausted } from '../../app/execution/executor.js'
import { clearOnceMark } from '../../locks/index.js'
import { setRequestFields, type EncodedException, type Job, type Outcome } from '../../app/execution/jobs.js'
import type { Placement, Pool } from '../pools/pool.js'
import { parseRate, TokenBucket } from './rate-limit.js'
import { setLongTimeout, type LongTimeout } from '../../app/execution/long-timeout.js'
import { Request } from './request.js'
import { inflateSync } from 'node:zlib'
import { BROKER_DELAY_LEAD_S } from '../../app/send-task.js'
import { escapeControl, taskLabel } from '../../protocol/secrets.js'

const DEFAULT_RETRY_DELAY = 180

export interface RunnerOptions {
  app: App
  /** accept_content and the certificate store (app.taskDecoder()); JSON only when absent. */
  decoder?: BodyDecoder
  transport: Transport
  pool: Pool
  backend: ResultBackend | null
  events: EventDispatcher
  revoked: LimitedSet
  log: Logger
  hostname: string
  acksLate: boolean
  timeLimit: number | null
  softTimeLimit: number | null
  /** Called when held ETA tasks change, so the consumer can widen its prefetch. */
  onScheduledChange: (count: number) => void
  /** Called after each task ends (the worker gives back prefetch held back after a reconnect). */
  onTaskDone?: () => void
  /** Where an ETA task waits when it is far away; the worker lowers `afterSeconds` when the broker shows a shorter timeout. */
  etaDelay?: EtaDelayPolicy
}

/**
 * RabbitMQ closes a channel that holds a delivery unacknowledged longer than
 * its consumer_timeout (30 min by default), and a worker holds an ETA task
 * unacknowledged until its time. So an ETA further away than `afterSeconds`
 * goes to the broker's delayed delivery, which gives it back to its queue at
 * its time, for any worker.
 */
export interface EtaDelayPolicy {
  enabled: boolean
  afterSeconds: number
  /**
   * Queues whose consumers have a static prefetch (quorum queues): an ETA
   * more than BROKER_QUEUE_HOLD_S away goes to the broker's delayed delivery
   * whatever afterSeconds says, so the worker holds none of them.
   */
  brokerQueues?: Set<string>
}

/**
 * The longest ETA a worker holds from a quorum queue's consumer. Not less:
 * the delayed delivery counts whole seconds, and senders have it give a
 * message back early (app/send-task.ts's BROKER_DELAY_LEAD_S, plus up to a
 * second; delayOnBroker subtracts one), which must then be held here, not
 * sent round again.
 */
export const BROKER_QUEUE_HOLD_S = BROKER_DELAY_LEAD_S + 2

/** worker_eta_broker_delay_after's default: below RabbitMQ's default consumer_timeout of 30 minutes. */
export const DEFAULT_ETA_DELAY_AFTER_S = 25 * 60

/** How long, and how many, tasks settled on a lost channel are remembered, so their redelivered copies are not run again. */
const SETTLED_ON_LOST_MAX = 10_000
const SETTLED_ON_LOST_TTL_MS = 60 * 60 * 1000
/**
 * How far back, from the moment the worker hears of a lost channel, a
 * settlement may not have reached the broker (the close was seen 35-200 ms
 * late under load), and how many settlements are kept for that.
 */
const RECENTLY_SETTLED_MS = 2_000
const RECENTLY_SETTLED_RING = 512

export class TaskRunner {
  readonly active = new Map<string, Request>()
  /** Received and due, waiting for the pool (not handed to it yet). */
  private readonly waiting: Request[] = []
  readonly scheduled = new Map<string, { request: Request; timer: LongTimeout }>()
  readonly total: Record<string, number> = {}
  readonly rateLimits = new Map<string, { rate: string | number | null; bucket: TokenBucket | null }>()
  readonly timeLimits = new Map<string, { soft: number | null; hard: number | null }>()
  processed = 0
  private paused = false
  private pumping = false
  /**
   * Requests handed to a pool that keeps its slots fed (Pool.place) and not
   * started yet, in the order handed: still reserved (inspect reserved lists
   * them) until the pool says they started, or gives them back.
   */
  private readonly staged = new Set<Request>()
  /** While staged requests are being taken back at shutdown: nothing more goes to the pool. */
  private releasing = false
  private readonly idleWaiters: Array<() => void> = []
  /**
   * Acks and requeues on their way to the broker. A task's slot is free once
   * its outcome is stored; on Redis an ack is a round trip of its own, and
   * holding the slot for it made the pool run in lockstep with the broker.
   * Shutdown still waits for them.
   */
  private settling = 0
  /** One function for every settlement, not a closure per task. */
  private readonly settled = (): void => {
    this.settling -= 1
    this.wakeIdleWaiters()
  }
  /** One function for every request, not a closure per task. */
  private readonly pidOfTask = (taskId: string): number | undefined => this.o.pool.slots().find((s) => s.taskId === taskId)?.pid
  /** A running task's updateState(): stored as Celery's store_result stores it, whatever ignore_result says, one after another. */
  private readonly stateOfTask = (taskId: string, state: string, meta: unknown): Promise<void> => {
    const request = this.active.get(taskId)
    if (!request) return Promise.resolve()
    const write = (request.stateWrites ?? Promise.resolve()).then(() => this.store(request, state, meta, null))
    // A meta that cannot be encoded fails its own updateState(), not the task's end.
    request.stateWrites = write.catch((error: unknown) => {
      this.o.log.error(`Could not store the ${state} state of ${taskLabel(request.message.task, taskId)}: ${(error as Error).message}`)
    })
    return write
  }

  /** Reserved: received and due, not started (staged in a pool slot first, then waiting for the pool). */
  get reserved(): Request[] {
    return this.staged.size === 0 ? this.waiting : [...this.staged, ...this.waiting]
  }

  /** Celery's result_extended: key-value results also carry the task's name, args, kwargs, worker, retries and queue. */
  private readonly resultExtended: boolean
  /**
   * Tasks that ended while the channel that delivered them was gone, so their
   * ack never reached the broker: id → how they were settled. The broker's
   * redelivered copy is settled the same way instead of running twice.
   */
  private readonly settledOnLost = new Map<string, { retries: number; how: 'ack' | 'reject'; at: number }>()
  private readonly recentlySettled: Array<{ id: string; retries: number; how: 'ack' | 'reject'; at: number } | undefined> = new Array(RECENTLY_SETTLED_RING)
  private recentlySettledNext = 0
  /** Runs that ended by replace(sig): their replacement, under the same id, is a new task, not a second copy. */
  private readonly replaced = new WeakSet<Request>()
  private readonly etaDelay: EtaDelayPolicy

  constructor(private readonly o: RunnerOptions) {
    this.resultExtended = o.app.options.conf?.result_extended === true
    this.etaDelay = o.etaDelay ?? { enabled: false, afterSeconds: DEFAULT_ETA_DELAY_AFTER_S }
  }

  // ---- receiving -------------------------------------------------------

  /**
   * Returns a promise only when there is something to wait for: a task that
   * runs and ends within the call is received, run, recorded and acked
   * without one (each promise and await was a visible share of a noop's cost).
   */
  onDelivery(delivery: Delivery): void | Promise<void> {
    let message: TaskRequest
    try {
      const maxBytes = this.o.decoder?.limits?.maxBytes ?? DEFAULT_MESSAGE_LIMITS.maxBytes
      if (delivery.body.length > maxBytes) throw sizeError('task body', delivery.body.length, maxBytes)
      if (delivery.properties.unreadableHeaders !== undefined) throw new Error(`unreadable header table: ${delivery.properties.unreadableHeaders}`)
      message = decodeTaskMessage({ headers: delivery.properties.headers, body: decompress(delivery, maxBytes), contentType: delivery.properties.contentType, contentEncoding: delivery.properties.contentEncoding, ...(this.o.decoder ? { decoder: this.o.decoder } : {}) })
    } catch (error) {
      if (error instanceof SecurityError || error instanceof ContentDisallowedError || error instanceof MessageLimitError) return this.refuse(delivery, error)
      this.o.log.error(`Received invalid task message (rejected, not requeued): ${(error as Error).message.split('\n')[0]} [queue=${delivery.queue} tag=${delivery.deliveryTag}]`)
      if (this.o.app.signals.has('task_rejected')) this.o.app.signals.send('task_rejected', { sender: this.o.hostname, message: { headers: delivery.properties.headers, body: delivery.body }, exc: error as Error })
      return delivery.reject({ requeue: false }).catch(() => undefined)
    }
    if (delivery.redelivered && this.takenOver(message, delivery)) return
    if (this.duplicateOfHeld(message, delivery)) return
    const request = new Request(message, delivery, this.o.hostname)
    if (!this.o.app.tasks.has(message.task)) return this.unregistered(request)
    if (this.o.revoked.has(message.id)) return this.revokeOnArrival(request, 'revoked')
    if (message.expires && new Date(message.expires).getTime() <= Date.now()) return this.revokeOnArrival(request, 'expired')
    const eta = request.etaDate
    const wait = eta ? eta.getTime() - Date.now() : 0
    const toBroker = this.etaDelay.brokerQueues?.has(delivery.queue) ? BROKER_QUEUE_HOLD_S : this.etaDelay.afterSeconds
    if (wait > toBroker * 1000 && this.etaDelay.enabled && this.o.transport.publishDelayed) return this.delayOnBroker(request, wait)
    if (wait > this.etaDelay.afterSeconds * 1000) {
      this.o.log.warning(
        `Task ${taskLabel(message.task, message.id)} has an ETA ${Math.round(wait / 1000)} s away, past the broker's consumer_timeout (RabbitMQ's default is 1800 s; this worker counts ${this.etaDelay.afterSeconds} s as safe): ` +
          `the broker will take it back from this worker before then and deliver it again. Raise the broker's consumer_timeout` +
          (this.o.transport.publishDelayed ? ' or turn on worker_eta_broker_delay.' : '.'),
      )
    }
    return this.accept(request)
  }

  /**
   * Celery's refusals, one line each, nothing run: a content type outside
   * accept_content is an invalid task (on_invalid_task: rejected), a signature
   * that does not verify is a decode error (on_decode_error: acked). A body
   * past the limits is Celery's decode error too (its json.loads hits the
   * recursion limit), logged at its level, but rejected without requeue, so a
   * queue's dead-letter exchange keeps it for inspection.
   */
  private refuse(delivery: Delivery, error: SecurityError | ContentDisallowedError | MessageLimitError): Promise<void> {
    const p = delivery.properties
    const h = p.headers ?? {}
    const where = `${typeof h.task === 'string' ? h.task : '?'}[${typeof h.id === 'string' ? h.id : p.correlationId ?? '?'}]`
    if (this.o.app.signals.has('task_rejected')) this.o.app.signals.send('task_rejected', { sender: this.o.hostname, message: { headers: p.headers, body: delivery.body }, exc: error })
    if (error instanceof SecurityError) {
      this.o.log.error(`Can't decode message body: DecodeError(SecurityError(${pyRepr(error.message)})) [type:'${p.contentType}' encoding:'${p.contentEncoding ?? ''}'] ${where}`)
      return delivery.ack().catch(() => undefined)
    }
    if (error instanceof MessageLimitError) {
      this.o.log.critical(`Can't decode message body: DecodeError(${error.pythonRepr}) [type:${pyRepr(p.contentType ?? '')} encoding:${pyRepr(p.contentEncoding ?? '')}] ${where} (${delivery.body.length}b, rejected, not requeued)`)
      return delivery.reject({ requeue: false }).catch(() => undefined)
    }
    this.o.log.error(`Received invalid task message (rejected, not requeued): ${error.message} ${where}`)
    return delivery.reject({ requeue: false }).catch(() => undefined)
  }

  /** Received here: signalled, logged, then held until its ETA or reserved. */
  private accept(request: Request): void | Promise<void> {
    const { message, delivery } = request
    if (this.o.app.signals.has('task_received')) this.o.app.signals.send('task_received', { sender: this.o.hostname, request: request.info() })
    if (this.o.log.enabled('INFO')) this.o.log.info(`Task ${taskLabel(message.task, message.id)} received`)
    if (this.o.events.taskEvents) {
      this.o.events.sendTask('task-received', {
        uuid: message.id,
        name: message.task,
        args: message.argsrepr,
        kwargs: message.kwargsrepr,
        root_id: message.rootId,
        parent_id: message.parentId,
        retries: message.retries,
        eta: message.eta,
        expires: message.expires,
      })
    }
    const eta = request.etaDate
    const wait = eta ? eta.getTime() - Date.now() : 0
    if (eta && wait > 0) {
      // Held unacked until due; the consumer widens its window by one (spec §1.6 step 4).
      const timer = setLongTimeout(() => {
        this.scheduled.delete(request.id)
        this.o.onScheduledChange(this.scheduled.size)
        this.reserve(request)
      }, wait)
      this.scheduled.set(request.id, { request, timer })
      this.o.onScheduledChange(this.scheduled.size)
      // On Redis the visibility timeout then runs from the ETA, not from now.
      return delivery.deferVisibility?.(eta.getTime() / 1000).catch((e: Error) => this.o.log.warning(`could not defer visibility of ${escapeControl(message.id)}: ${e.message}`))
    }
    this.reserve(request)
  }

  private async unregistered(request: Request): Promise<void> {
    const name = request.name
    this.o.log.error(`Received unregistered task of type '${escapeControl(name)}'.\nThe message has been ignored and discarded.`)
    if (this.o.app.signals.has('task_unknown')) {
      const exc = Object.assign(new Error(`'${name}'`), { name: 'NotRegistered' })
      this.o.app.signals.send('task_unknown', { sender: this.o.hostname, name, id: request.id, message: { headers: request.delivery.properties.headers, body: request.delivery.body }, exc })
    }
    await request.reject(false).catch(() => undefined)
    await this.store(request, 'FAILURE', { exc_type: 'NotRegistered', exc_message: [name], exc_module: 'celery.exceptions' }, null)
    this.o.events.sendTask('task-failed', { uuid: request.id, exception: `NotRegistered('${name}')` })
  }

  private async revokeOnArrival(request: Request, reason: 'revoked' | 'expired'): Promise<void> {
    this.o.log.info(`Discarding revoked task: ${taskLabel(request.name, request.id)}${reason === 'expired' ? ' (expired)' : ''}`)
    await this.clearOnce(request)
    await request.ack().catch(() => undefined)
    await this.storeEnd(request, 'REVOKED', { exc_type: 'TaskRevokedError', exc_message: [reason], exc_module: 'celery.exceptions' }, null, true)
    this.o.events.sendTask('task-revoked', { uuid: request.id, terminated: false, signum: null, expired: reason === 'expired' })
    this.signalRevoked(request, false, null, reason === 'expired')
  }

  private signalRevoked(request: Request, terminated: boolean, signum: number | null, expired: boolean): void {
    if (this.o.app.signals.has('task_revoked')) this.o.app.signals.send('task_revoked', { sender: request.name, request: request.info(), terminated, signum, expired })
  }

  private reserve(request: Request): void {
    if (this.lostDelivery(request)) return
    this.waiting.push(request)
    this.pump()
  }

  /**
   * True (and logged) when the broker has taken the request's delivery back:
   * its channel closed, so the broker delivers it again, to this worker or
   * another, and this copy must not run (Celery's consumer drops its reserved
   * requests on close for the same reason).
   */
  private lostDelivery(request: Request): boolean {
    if (request.delivery.isLive?.() !== false) return false
    this.o.log.debug(`Dropped ${taskLabel(request.name, request.id)}: the broker took its delivery back and delivers it again`)
    return true
  }

  /**
   * Drops every held request (waiting for its ETA, a rate-limit token or a pool
   * slot) whose delivery the broker took back, at once and with its timer.
   * Running tasks finish; their acks are dropped by the transport. Returns the
   * dropped requests.
   */
  dropLost(): Request[] {
    this.rememberRecentlySettled()
    const dropped: Request[] = []
    for (const [id, entry] of this.scheduled) {
      if (entry.request.delivery.isLive?.() !== false) continue
      entry.timer.clear()
      this.scheduled.delete(id)
      dropped.push(entry.request)
    }
    const scheduledDropped = dropped.length
    // Staged in the pool: taken back first (placement.returned() then drops them), unless they start meanwhile.
    const lostStaged = [...this.staged].filter((r) => r.delivery.isLive?.() === false)
    if (lostStaged.length > 0) void this.o.pool.unstage?.(lostStaged.map((r) => r.id))
    for (let i = this.waiting.length - 1; i >= 0; i -= 1) {
      const request = this.waiting[i]!
      if (request.delivery.isLive?.() !== false) continue
      this.waiting.splice(i, 1)
      dropped.push(request)
    }
    if (scheduledDropped > 0) this.o.onScheduledChange(this.scheduled.size)
    if (dropped.length > 0) this.wakeIdleWaiters()
    return dropped
  }

  /**
   * The broker's new copy of a task this worker ran, or still runs, from a
   * channel that has since closed: it takes that run's outcome instead of
   * running again. True when the delivery was taken over.
   */
  private takenOver(message: TaskRequest, delivery: Delivery): boolean {
    const running = this.active.get(message.id)
    if (running && running.successor === null && running.message.retries === message.retries && running.delivery.isLive?.() === false) {
      running.successor = delivery
      this.o.log.info(`Task ${taskLabel(message.task, message.id)} delivered again while it still runs from a closed channel: this copy takes that run's outcome`)
      return true
    }
    const settled = this.settledOnLost.get(message.id)
    if (!settled || settled.retries !== message.retries) return false
    this.settledOnLost.delete(message.id)
    this.o.log.info(`Task ${taskLabel(message.task, message.id)} delivered again after it ended on a closed channel: settled (${settled.how}), not run again`)
    this.track(settled.how === 'ack' ? delivery.ack() : delivery.reject({ requeue: false }))
    return true
  }

  /**
   * A second live copy of a task this worker already holds, waiting for its
   * ETA or running (same id, same retries), is acked, not run again. Two
   * copies come back from the broker's delayed delivery when a worker dies
   * between the delayed copy's confirm and the original's ack: the original is
   * delivered again and moved again; and a sender whose publish was retried
   * across a broker restart may have published it twice.
   */
  private duplicateOfHeld(message: TaskRequest, delivery: Delivery): boolean {
    const held = this.scheduled.get(message.id)?.request ?? this.active.get(message.id) ?? this.reservedCopy(message.id)
    if (!held || held.delivery === delivery || held.message.retries !== message.retries || held.delivery.isLive?.() === false || this.replaced.has(held)) return false
    if (this.active.get(message.id) === held && held.successor === null) {
      // Running: the second copy is settled as the run ends, as the first is, so
      // a requeue still leaves one copy (on Redis both carry the same tag).
      held.successor = delivery
      this.o.log.warning(`Task ${taskLabel(message.task, message.id)} delivered twice while it runs here: the second copy takes this run's outcome`)
      return true
    }
    this.o.log.warning(`Task ${taskLabel(message.task, message.id)} delivered twice (this worker holds it already): the second copy is acked, not run`)
    this.track(delivery.ack())
    return true
  }

  /** A reserved request of that id: a scan, but the list is at most the prefetch window. */
  private reservedCopy(id: string): Request | undefined {
    for (const r of this.staged) if (r.id === id) return r
    for (const r of this.waiting) if (r.id === id) return r
    return undefined
  }

  /**
   * The broker closed a channel: an ack sent on it just before may not have
   * reached the broker, which then delivers the task again. What this worker
   * settled in the moments before it noticed counts as settled on the lost
   * channel, so the redelivered copies take that outcome instead of running.
   */
  private rememberRecentlySettled(): void {
    const since = Date.now() - RECENTLY_SETTLED_MS
    for (const entry of this.recentlySettled) {
      if (entry && entry.at >= since && !this.settledOnLost.has(entry.id)) this.settledOnLost.set(entry.id, { retries: entry.retries, how: entry.how, at: entry.at })
    }
  }

  /**
   * Moves a far ETA task to the broker's delayed delivery: published there
   * (confirmed), then acked, so it is never lost; it comes back to its queue
   * one to two seconds before its ETA (the wait's whole seconds less one: the
   * fraction is dropped too) and is held for the rest as any near ETA is.
   */
  private async delayOnBroker(request: Request, waitMs: number): Promise<void> {
    const m = request.message
    const d = request.delivery
    const delaySeconds = Math.max(0, Math.floor(waitMs / 1000) - 1)
    try {
      await this.o.transport.publishDelayed!(d.queue, { body: d.body, properties: withoutDeathRecord(d.properties) }, delaySeconds)
    } catch (error) {
      this.o.log.warning(`Task ${taskLabel(m.task, m.id)}: could not hand its ETA to the broker's delayed delivery (${(error as Error).message}); holding it here`)
      return this.accept(request)
    }
    this.track(request.ack())
    this.o.log.info(`Task ${taskLabel(m.task, m.id)} has an ETA ${Math.round(waitMs / 1000)} s away: handed to the broker's delayed delivery, back in ${d.queue} at ${m.eta}`)
  }

  // ---- dispatching -----------------------------------------------------

  pause(): void {
    this.paused = true
  }

  resume(): void {
    this.paused = false
    this.pump()
  }

  /** Starts reserved requests while the pool has room and their rate limits allow. */
  pump(): void {
    if (this.pumping || this.releasing) return
    this.pumping = true
    try {
      const pool = this.o.pool
      while (!this.paused && this.waiting.length > 0) {
        // Past its free slots, a pool that keeps its slots fed takes a few more (staged behind short tasks).
        const free = this.active.size + this.staged.size < pool.size
        if (!free && !pool.canPlace?.()) break
        const index = this.startable(free)
        if (index === -1) {
          const wait = Math.min(...this.waiting.map((r) => this.peekRateWait(r.name)))
          // Not free: what waits may be a tracked task waiting for a slot, which the next task's end pumps.
          if (free || wait > 0) setTimeout(() => this.pump(), Math.max(5, wait * 1000)).unref()
          break
        }
        const request = index === 0 ? this.waiting.shift() : this.waiting.splice(index, 1)[0]
        // Staged, it stays reserved until the pool starts it.
        void this.execute(request!, pool.place !== undefined && !this.tracksStarted(request!))
      }
    } finally {
      this.pumping = false
    }
  }

  /**
   * The first waiting request that may start now (a free slot, or one that
   * need not wait for one, and its rate limit's token, which this takes).
   * A loop, not findIndex: pump runs per task, and the usual answer is 0.
   */
  private startable(free: boolean): number {
    for (let i = 0; i < this.waiting.length; i += 1) {
      const r = this.waiting[i]!
      if ((free || !this.tracksStarted(r)) && this.rateWait(r.name) === 0) return i
    }
    return -1
  }

  /** track_started: STARTED is stored before the task runs, so such a task only goes to a free slot. */
  private tracksStarted(request: Request): boolean {
    return this.o.app.tasks.get(request.name)?.options.trackStarted === true
  }

  private bucketFor(name: string): TokenBucket | null {
    const configured = this.rateLimits.get(name)
    if (configured) return configured.bucket
    const rate = this.o.app.tasks.get(name)?.options.rateLimit ?? null
    const perSecond = parseRate(rate)
    const bucket = perSecond > 0 ? new TokenBucket(perSecond) : null
    this.rateLimits.set(name, { rate, bucket })
    return bucket
  }

  private rateWait(name: string): number {
    return this.bucketFor(name)?.take() ?? 0
  }

  private peekRateWait(name: string): number {
    return this.bucketFor(name)?.peek() ?? 0
  }

  setRateLimit(name: string, rate: string | number | null): void {
    const perSecond = parseRate(rate)
    this.rateLimits.set(name, { rate, bucket: perSecond > 0 ? new TokenBucket(perSecond) : null })
    this.pump()
  }

  private limitsFor(request: Request): { hard: number | null; soft: number | null } {
    const override = this.timeLimits.get(request.name)
    const task = this.o.app.tasks.get(request.name)
    const [hdrHard, hdrSoft] = request.message.timelimit
    return {
      hard: hdrHard ?? override?.hard ?? task?.options.timeLimit ?? this.o.timeLimit,
      soft: hdrSoft ?? override?.soft ?? task?.options.softTimeLimit ?? this.o.softTimeLimit,
    }
  }

  /** `placing`: it goes to Pool.place, staged (reserved) until the pool starts it, active from then. */
  private execute(request: Request, placing = false): void | Promise<void> {
    const m = request.message
    if (this.lostDelivery(request)) {
      this.wakeIdleWaiters()
      return
    }
    if (this.o.revoked.has(m.id)) return this.discardAtStart(request, 'revoked')
    // Checked again when it would start, as Celery's Request.revoked() does: a task that waited
    // behind a busy pool, a rate limit or its ETA may have expired meanwhile.
    if (m.expires && Date.parse(m.expires) <= Date.now()) return this.discardAtStart(request, 'expired')
    if (m.task === 'celery.chord_unlock') return this.unlockChord(request)
    if (placing) {
      this.staged.add(request)
      return this.run(request, this.placementOf(request))
    }
    const task = this.begin(request)
    if (task.options.trackStarted) {
      request.workerPid = this.o.pool.slots()[0]?.pid ?? process.pid
      return this.store(request, 'STARTED', { pid: request.workerPid, hostname: this.o.hostname }, null).then(() => this.run(request))
    }
    return this.run(request)
  }

  /** The request starts: active from now, acked now unless late, task-started sent. */
  private begin(request: Request): Task {
    const m = request.message
    const task = this.o.app.tasks.get(m.task)!
    const acksLate = task.options.acksLate ?? this.o.acksLate
    this.active.set(m.id, request)
    request.timeStart = Date.now() / 1000
    if (!acksLate) this.track(request.ack())
    if (this.o.events.taskEvents) this.o.events.sendTask('task-started', { uuid: m.id })
    return task
  }

  /** What the pool tells about a staged request. */
  private placementOf(request: Request): Placement {
    return {
      started: () => {
        this.staged.delete(request)
        this.begin(request)
      },
      returned: () => {
        this.staged.delete(request)
        if (this.lostDelivery(request)) {
          this.wakeIdleWaiters()
          return
        }
        // First in line again, to go out again (or back to the broker at shutdown).
        this.waiting.unshift(request)
        queueMicrotask(() => this.pump())
      },
    }
  }

  /** A reserved task revoked or expired by the time it would start: it never runs, and may be the last one a shutdown waits for. */
  private async discardAtStart(request: Request, reason: 'revoked' | 'expired'): Promise<void> {
    await this.revokeOnArrival(request, reason)
    this.wakeIdleWaiters()
    this.pump()
  }

  private run(request: Request, placement?: Placement): void | Promise<void> {
    const m = request.message
    const limits = this.limitsFor(request)
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
    let running: Outcome | Promise<Outcome>
    try {
      running = placement ? this.o.pool.place!(job, limits.hard, this.stateOfTask, placement) : this.o.pool.run(job, limits.hard, this.stateOfTask)
      request.pidProbe = this.pidOfTask
    } catch (error) {
      // The pool could not take it at all: rejected, not requeued, or it would come back and fail again.
      if (placement) this.staged.delete(request)
      this.o.log.error(`Pool could not run ${m.task}[${m.id}]: ${(error as Error).message}; rejected, not requeued`)
      running = { status: 'rejected', requeue: false, reason: `the pool could not take it: ${(error as Error).message}`, runtime: 0 }
    }
    if (placement && running instanceof Promise) {
      return running.then(
        (outcome) => this.complete(request, outcome),
        (error: unknown) => {
          // A pool that could not place it (closing): it waits, to go back to the broker.
          if (!this.staged.has(request)) return this.complete(request, this.lost(request, error))
          this.staged.delete(request)
          this.waiting.unshift(request)
        },
      )
    }
    if (running instanceof Promise) {
      return running.then(
        (outcome) => this.complete(request, outcome),
        (error: unknown) => this.complete(request, this.lost(request, error)),
      )
    }
    return this.complete(request, running)
  }

  /** celery.chord_unlock runs here, beside the backend and the broker, never in the pool. */
  private async unlockChord(request: Request): Promise<void> {
    this.begin(request)
    const started = Date.now()
    let outcome: Outcome
    try {
      const next = await unlockChord(this.o, request)
      outcome = next.status === 'retry'
        ? { status: 'retry', countdown: next.countdown, eta: null, maxRetries: null, exc: null, runtime: (Date.now() - started) / 1000 }
        : { status: 'ignored', runtime: (Date.now() - started) / 1000 }
    } catch (error) {
      const e = error as Error
      outcome = { status: 'failure', exc: { type: e.name || 'Error', args: [e.message], module: 'builtins', message: e.message }, traceback: e.stack ?? null, runtime: (Date.now() - started) / 1000 }
    }
    return this.complete(request, outcome)
  }

  private lost(request: Request, error: unknown): Outcome {
    this.o.log.error(`Pool could not run ${taskLabel(request.message.task, request.message.id)}: ${(error as Error).message}`)
    return { status: 'killed', reason: 'worker-lost', signal: null, runtime: 0 }
  }

  private complete(request: Request, outcome: Outcome): void | Promise<void> {
    if (outcome.endHooks) request.endHooksHeld = true
    // The end state must land after every updateState() store, or a late PROGRESS would hide it.
    if (request.stateWrites) return this.completeLater(request, request.stateWrites.then(() => this.finish(request, outcome)))
    let finishing: void | Promise<void>
    try {
      finishing = this.finish(request, outcome)
    } catch (error) {
      finishing = Promise.reject(error)
    }
    if (finishing) return this.completeLater(request, finishing)
    this.done(request)
  }

  private async completeLater(request: Request, finishing: Promise<void>): Promise<void> {
    try {
      await finishing
    } catch (error) {
      this.o.log.error(`Could not record the outcome of ${taskLabel(request.message.task, request.message.id)}: ${(error as Error).message}`)
      await request.reject(true).catch(() => undefined)
    } finally {
      this.done(request)
    }
  }

  private done(request: Request): void {
    const m = request.message
    // A redelivered copy (after a connection loss) may run under the same id meanwhile.
    if (this.active.get(m.id) === request) this.active.delete(m.id)
    this.total[m.task] = (this.total[m.task] ?? 0) + 1
    this.processed += 1
    this.o.onTaskDone?.()
    // Before pump(): the slot runs the held hooks before any task sent to it next.
    if (request.endHooksHeld) this.o.pool.afterStored(m.id)
    this.wakeIdleWaiters()
    this.pump()
  }

  // ---- outcomes --------------------------------------------------------

  /** A task with the `once` option: its mark goes before its end is stored, so a sender told of the end may send again. */
  private finish(request: Request, outcome: Outcome): void | Promise<void> {
    const clearing = this.endsOnce(request, outcome) ? this.clearOnce(request) : undefined
    if (clearing) return clearing.then(() => this.finishNow(request, outcome))
    return this.finishNow(request, outcome)
  }

  /** Whether this outcome ends the task (a retry or a requeue leaves it queued). */
  private endsOnce(request: Request, outcome: Outcome): boolean {
    const m = request.message
    const task = this.o.app.tasks.get(m.task)
    if (!task?.options.once || request.restored) return false
    switch (outcome.status) {
      case 'retry':
        return retriesExhausted(m.retries, outcome.maxRetries, task.options.maxRetries)
      case 'rejected':
        return !outcome.requeue
      case 'killed':
        return outcome.reason === 'time-limit' || outcome.reason === 'terminated' || task.options.rejectOnWorkerLost === false
      default:
        return true
    }
  }

  private clearOnce(request: Request): Promise<void> | undefined {
    const m = request.message
    return clearOnceMark(this.o.app, { id: m.id, task: m.task, args: m.args, kwargs: m.kwargs }, (line) => this.o.log.warning(line))
  }

  /** Returns a promise only when something must be waited for (a result to store, callbacks to send). */
  private finishNow(request: Request, outcome: Outcome): void | Promise<void> {
    const m = request.message
    if (request.restored) {
      this.o.events.sendTask('task-cancelled', { uuid: m.id })
      return
    }
    const ignoreResult = m.ignoreResult || this.o.app.tasks.get(m.task)?.options.ignoreResult === true
    // Celery's handle_error_state: a task that ignores its result stores its errors only under task_store_errors_even_if_ignored.
    if (outcome.status !== 'success') return this.finishUnsuccessful(request, outcome, ignoreResult && this.o.app.conf.task_store_errors_even_if_ignored !== true)
    if (this.o.log.enabled('INFO')) this.o.log.info(`Task ${taskLabel(m.task, m.id)} succeeded in ${outcome.runtime.toFixed(6)}s: ${saferepr(outcome.value)}`)
    const storing = (!ignoreResult && !!this.o.backend) || isChordPart(m)
    const following = !!(m.embed.callbacks?.length || m.embed.chain?.length)
    if (storing || following) return this.succeedLater(request, outcome, !ignoreResult, following)
    this.sendSucceededEvent(request, outcome)
    this.settle(request, 'ack')
  }

  /**
   * The stored result first, then the event, then callbacks, then the ack, as
   * Celery orders them. A return value JSON cannot carry fails the task with
   * kombu's EncodeError, as Celery's trace does; requeued, it would fail the
   * same way for ever.
   */
  private async succeedLater(request: Request, outcome: Extract<Outcome, { status: 'success' }>, keepResult: boolean, following: boolean): Promise<void> {
    try {
      await this.storeEnd(request, 'SUCCESS', outcome.value, null, keepResult)
      this.sendSucceededEvent(request, outcome)
      if (following) await sendCallbacks(this.o, request, outcome.value)
    } catch (error) {
      if (!(error instanceof EncodeError)) throw error
      const m = request.message
      this.o.log.error(`Task ${taskLabel(m.task, m.id)} raised unexpected: EncodeError(${error.reason})`)
      await this.fail(request, encodeFailure(error), null, !keepResult)
      this.settle(request, this.afterFailure(m.task))
      return
    }
    this.settle(request, 'ack')
  }

  private sendSucceededEvent(request: Request, outcome: Extract<Outcome, { status: 'success' }>): void {
    // saferepr of a large result is not free: only when someone listens.
    if (this.o.events.taskEvents) this.o.events.sendTask('task-succeeded', { uuid: request.message.id, result: saferepr(outcome.value), runtime: outcome.runtime })
  }

  private async finishUnsuccessful(request: Request, outcome: Exclude<Outcome, { status: 'success' }>, ignoreResult: boolean): Promise<void> {
    const m = request.message
    switch (outcome.status) {
      case 'failure': {
        // The traceback on the lines after, as Celery logs exc_info (`tsq logtool errors` prints them whole).
        this.o.log.error(`Task ${taskLabel(m.task, m.id)} raised unexpected: ${excRepr(outcome.exc)}${outcome.traceback ? `\n${outcome.traceback}` : ''}`)
        await this.fail(request, outcome.exc, outcome.traceback, ignoreResult)
        this.settle(request, this.afterFailure(m.task))
        return
      }
      case 'retry':
        return this.retry(request, outcome, ignoreResult)
      case 'ignored':
        if (outcome.replacedBy) {
          // replace(sig): the replacement goes out in the task's place, as Celery's sig.delay() before its Ignore.
          // It has this task's id and may reach this worker at once: the held hooks (nothing is stored for
          // an ignored run) are released first, and the copy is not taken for a duplicate of this one.
          if (request.endHooksHeld) {
            request.endHooksHeld = false
            this.o.pool.afterStored(m.id)
          }
          this.replaced.add(request)
          try {
            await sendReplacement(this.o, request, outcome.replacedBy as Parameters<typeof sendReplacement>[2])
          } catch (error) {
            const exc = encodeError(error)
            this.o.log.error(`Task ${taskLabel(m.task, m.id)} raised unexpected: ${excRepr(exc)}`)
            await this.fail(request, exc, (error as Error).stack ?? null, ignoreResult)
            this.settle(request, this.afterFailure(m.task))
            return
          }
        }
        if (outcome.skipped) {
          // Celery sends no event for an Ignore, so a skipped run would look like one still running. A custom
          // task event ends it: Celery's events.State (and so Flower and `celery events`) takes an unknown
          // task-* event's type as the task's state (SKIPPED).
          this.o.events.sendTask('task-skipped', { uuid: m.id, reason: 'locked', lock: outcome.skipped.lock, lease_left: outcome.skipped.leaseLeftMs / 1000 })
        }
        if (this.o.log.enabled('INFO')) this.o.log.info(`Task ${taskLabel(m.task, m.id)} ignored`)
        this.settle(request, 'ack')
        return
      case 'rejected':
        this.o.log.warning(`Task ${taskLabel(m.task, m.id)} reject requeue=${outcome.requeue ? 'True' : 'False'}: ${outcome.reason ?? 'None'}`)
        // After an early ack there is nothing left to reject, as in Celery.
        if (!request.settled) this.o.events.sendTask('task-rejected', { uuid: m.id, requeue: outcome.requeue })
        this.settle(request, outcome.requeue ? 'requeue' : 'reject')
        return
      case 'killed': {
        if (outcome.reason === 'time-limit') {
          const hard = this.limitsFor(request).hard ?? 0
          const exc: EncodedException = { type: 'TimeLimitExceeded', args: [hard], module: 'celery.exceptions', message: String(hard) }
          await this.fail(request, exc, null, ignoreResult)
          this.settle(request, this.afterFailure(m.task))
        } else if (outcome.reason === 'terminated') {
          this.o.log.info(`Terminating ${escapeControl(m.id)} (${outcome.signal ?? 'SIGTERM'})`)
          await this.storeEnd(request, 'REVOKED', { exc_type: 'TaskRevokedError', exc_message: ['terminated'], exc_module: 'celery.exceptions' }, null, true)
          this.o.events.sendTask('task-revoked', { uuid: m.id, terminated: true, signum: signum(outcome.signal), expired: false })
          this.signalRevoked(request, true, signum(outcome.signal), false)
          this.settle(request, 'ack')
        } else if (this.o.app.tasks.get(m.task)?.options.rejectOnWorkerLost === false) {
          // Celery's own default: the task fails with WorkerLostError and its message is not tried again.
          const sig = outcome.signal
          const text = sig ? `Worker exited prematurely: signal ${signum(sig) ?? sig} (${sig}).` : 'Worker exited prematurely.'
          this.o.log.error(`Task handler raised error: WorkerLostError('${text}')`)
          await this.fail(request, { type: 'WorkerLostError', args: [text], module: 'billiard.exceptions', message: text }, null, ignoreResult)
          this.settle(request, this.afterFailure(m.task))
        } else {
          // reject_on_worker_lost: the message goes back for another try (at-least-once).
          this.o.log.error(`Process running ${taskLabel(m.task, m.id)} was lost; the task is requeued`)
          this.settle(request, 'requeue')
        }
        return
      }
    }
  }

  /** Celery's task_acks_on_failure_or_timeout: false rejects a failed late-ack message (dead-lettered where the queue has a DLX). */
  private afterFailure(taskName: string): 'ack' | 'reject' {
    return this.o.app.tasks.get(taskName)?.options.acksOnFailureOrTimeout === false ? 'reject' : 'ack'
  }

  private async fail(request: Request, exc: EncodedException, traceback: string | null, ignoreResult: boolean): Promise<void> {
    const m = request.message
    const result = { exc_type: exc.type, exc_message: serializableArgs(exc.args), exc_module: exc.module }
    await this.storeEnd(request, 'FAILURE', result, traceback, !ignoreResult)
    this.o.events.sendTask('task-failed', { uuid: m.id, exception: excRepr(exc), traceback })
    // The chain after it fails too (and a chord it ends a header part of), as Celery's mark_as_failure.
    if (m.embed.chain?.length) await failChainRest(this.o, request, result, traceback).catch((e: Error) => this.o.log.error(`Task ${taskLabel(m.task, m.id)}: its chain's failure was not recorded: ${e.message}`))
    await sendErrbacks(this.o, request, (task, e) => this.o.log.error(`errback ${escapeControl(task)} not sent: ${e.message}`), { exc, traceback })
  }

  private async retry(request: Request, outcome: Extract<Outcome, { status: 'retry' }>, ignoreResult: boolean): Promise<void> {
    const m = request.message
    const task = this.o.app.tasks.get(m.task)
    if (retriesExhausted(m.retries, outcome.maxRetries, task?.options.maxRetries)) {
      const exc = outcome.exc ?? { type: 'MaxRetriesExceededError', args: [`Can't retry ${m.task}[${m.id}] args:${m.argsrepr} kwargs:${m.kwargsrepr}`], module: 'celery.exceptions', message: '' }
      // As Celery's trace logs the error retry() raises past the limit; silent, the run just vanished from the log.
      this.o.log.error(`Task ${taskLabel(m.task, m.id)} raised unexpected: ${excRepr(exc)}`)
      await this.fail(request, exc, null, ignoreResult)
      this.settle(request, 'ack')
      return
    }
    const countdown = outcome.countdown ?? task?.options.defaultRetryDelay ?? DEFAULT_RETRY_DELAY
    const eta = outcome.eta ?? new Date(Date.now() + countdown * 1000).toISOString()
    await republishForRetry(this.o, request, eta)
    const exc = outcome.exc ?? { type: 'Retry', args: [`Retry in ${countdown}s`], module: 'celery.exceptions', message: `Retry in ${countdown}s` }
    this.o.log.info(`Task ${taskLabel(m.task, m.id)} retry: Retry in ${countdown}s`)
    if (!ignoreResult) await this.store(request, 'RETRY', { exc_type: exc.type, exc_message: serializableArgs(exc.args), exc_module: exc.module }, null)
    this.o.events.sendTask('task-retried', { uuid: m.id, exception: excRepr(exc), traceback: null })
    this.settle(request, 'ack')
  }

  /**
   * A task's last state, as Celery's mark_as_done/failure/revoked record it:
   * the result (unless ignored), then, for a chord header task, its part of
   * the chord, which an ignored result still counts.
   */
  private async storeEnd(request: Request, status: TaskState, result: unknown, traceback: string | null, keepResult: boolean): Promise<void> {
    if (keepResult) await this.store(request, status, result, traceback)
    if (!isChordPart(request.message)) return
    try {
      await returnChordPart(this.o, request, status, result)
    } catch (error) {
      const m = request.message
      this.o.log.error(`Chord ${escapeControl(String(m.group))}: the part of ${taskLabel(m.task, m.id)} was not recorded: ${(error as Error).message}`)
    }
  }

  async store(request: Request, status: StateName, result: unknown, traceback: string | null): Promise<void> {
    const backend = this.o.backend
    if (!backend) return
    const m = request.message
    const value = backend.shortForm
      ? rpcResultValue({ taskId: m.id, status, result, traceback })
      : resultMetaValue({ taskId: m.id, status, result, traceback, groupId: m.group, parentId: m.parentId, extended: this.resultExtended ? extendedFields(request, this.o.hostname) : undefined })
    // Encoded here, so a value the serializer cannot carry is the task's EncodeError, as in Celery's trace.
    const json = backend.codec && backend.codec.serializer !== 'json' ? serialize(backend.codec.serializer, value).body : dumps(value)
    try {
      await backend.store(m.id, json, status, { replyTo: request.delivery.properties.replyTo, correlationId: request.delivery.properties.correlationId ?? m.id })
    } catch (error) {
      this.o.log.error(`Could not store the ${status} result of ${taskLabel(m.task, m.id)}: ${(error as Error).message}`)
      // Raised outside the task's body, as Celery's trace sends it when mark_as_done/failure raise.
      const signals = this.o.app.signals
      if (signals.has('task_internal_error')) signals.send('task_internal_error', { sender: m.task, taskId: m.id, args: m.args, kwargs: m.kwargs, request: request.info(), exception: error, traceback: (error as Error).stack ?? null })
    }
  }

  // ---- shutdown --------------------------------------------------------

  /** Cold shutdown: the running requests are handed back, not finished; their outcomes are ignored. */
  restoreActive(): Request[] {
    const running = [...this.active.values()].filter((r) => !r.restored)
    for (const r of running) r.restored = true
    return running
  }

  /** Hands back what was fetched but not started: scheduled (ETA) and reserved. */
  async releaseUnstarted(): Promise<number> {
    const held = [...this.scheduled.values()].map((s) => {
      s.timer.clear()
      return s.request
    })
    this.scheduled.clear()
    // Staged in the pool: taken back (or started) first, so none runs here after going back to the broker.
    if (this.staged.size > 0) {
      this.releasing = true
      try {
        await this.o.pool.unstage?.()
      } finally {
        this.releasing = false
      }
    }
    const waiting = this.waiting.splice(0)
    const all = [...held, ...waiting]
    await Promise.all(all.map((r) => r.reject(true).catch(() => undefined)))
    return all.length
  }

  /** Resolves when no task is running or waiting, and every ack has gone out. */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  private isIdle(): boolean {
    return this.active.size === 0 && this.waiting.length === 0 && this.staged.size === 0 && this.settling === 0
  }

  private wakeIdleWaiters(): void {
    if (this.idleWaiters.length > 0 && this.isIdle()) for (const wake of this.idleWaiters.splice(0)) wake()
  }

  /**
   * Sends a finished task's ack (or requeue) without holding its slot. One
   * that fails leaves the message with the broker, which delivers it again
   * (at-least-once), as after a lost connection.
   */
  private settle(request: Request, how: 'ack' | 'requeue' | 'reject'): void {
    const m = request.message
    const successor = request.successor
    if (successor) {
      // The broker's other copy of this run takes its outcome; the run's own
      // delivery is settled too while it is still live (a duplicate), not once it is gone.
      this.track(how === 'ack' ? successor.ack() : successor.reject({ requeue: how === 'requeue' }))
      if (request.delivery.isLive?.() === false) {
        request.settled = true
        return
      }
    }
    if (how !== 'requeue' && !request.settled) {
      if (request.delivery.isLive?.() === false) this.rememberSettledOnLost(m, how)
      else this.noteSettled(m, how)
    }
    this.track(how === 'ack' ? request.ack() : request.reject(how === 'requeue'), (error) => {
      this.o.log.error(`Could not ${how} ${taskLabel(m.task, m.id)}, the broker will deliver it again: ${(error as Error).message}`)
      this.settled()
    })
  }

  /** A ring of the last settlements, for rememberRecentlySettled: a slot written per task, no allocation beyond it. */
  private noteSettled(m: TaskRequest, how: 'ack' | 'reject'): void {
    this.recentlySettled[this.recentlySettledNext] = { id: m.id, retries: m.retries, how, at: Date.now() }
    this.recentlySettledNext = (this.recentlySettledNext + 1) % RECENTLY_SETTLED_RING
  }

  private rememberSettledOnLost(m: TaskRequest, how: 'ack' | 'reject'): void {
    const now = Date.now()
    for (const [id, entry] of this.settledOnLost) {
      if (this.settledOnLost.size < SETTLED_ON_LOST_MAX && now - entry.at < SETTLED_ON_LOST_TTL_MS) break
      this.settledOnLost.delete(id)
    }
    this.settledOnLost.set(m.id, { retries: m.retries, how, at: now })
  }

  /** Counts `sent` until it settles; a failure goes to `onFailure` (silent by default, as an early ack's). */
  private track(sent: Promise<void>, onFailure: (error: unknown) => void = this.settled): void {
    this.settling += 1
    void sent.then(this.settled, onFailure)
  }
}

/**
 * kombu's `compression` header (task_compression): 'application/x-gzip' and
 * 'zlib' are zlib streams. A body that does not inflate, or a codec we lack,
 * is unreadable, so the message is rejected instead of run as if plain.
 */
function decompress(delivery: Delivery, maxBytes: number): Buffer {
  const codec = delivery.properties.headers?.compression
  if (codec === undefined || codec === null) return delivery.body
  if (codec === 'application/x-gzip' || codec === 'zlib') {
    try {
      return inflateSync(delivery.body, { maxOutputLength: maxBytes })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw new MessageLimitError(`decompressed task body exceeds the limit of ${maxBytes} bytes (worker_message_max_bytes)`, 'ValueError')
      throw new Error(`cannot decompress body (${String(codec)}): ${(error as Error).message}`)
    }
  }
  throw new Error(`unsupported compression ${JSON.stringify(codec)}`)
}

/** What result_extended adds, as Celery's _get_result_meta takes it from the request (queue: the delivery's routing key). */
function extendedFields(request: Request, hostname: string): ExtendedResultFields {
  const m = request.message
  return { name: m.task, args: m.args, kwargs: m.kwargs, worker: hostname, retries: m.retries, queue: request.delivery.routingKey ?? null }
}

/**
 * The record RabbitMQ adds when it dead-letters a message (x-death and the
 * x-first-death-* headers) is the broker's, not the sender's: a message moved
 * to the delayed delivery again leaves it behind, so the broker writes its own.
 */
function withoutDeathRecord(properties: Delivery['properties']): Delivery['properties'] {
  const headers = properties.headers
  if (!headers || !Object.keys(headers).some(isDeathHeader)) return properties
  return { ...properties, headers: Object.fromEntries(Object.entries(headers).filter(([key]) => !isDeathHeader(key))) }
}

function isDeathHeader(key: string): boolean {
  return key === 'x-death' || key.startsWith('x-first-death-') || key.startsWith('x-last-death-')
}

/** The task-message headers protocol v2 defines (and kombu's compression); the rest are a sender's own. */
const CELERY_HEADERS = new Set(['lang', 'task', 'id', 'shadow', 'eta', 'expires', 'group', 'group_index', 'retries', 'timelimit', 'root_id', 'parent_id', 'argsrepr', 'kwargsrepr', 'origin', 'ignore_result', 'replaced_task_nesting', 'stamped_headers', 'stamps', 'compression'])

/** A sender's own headers, or undefined when there are none (the usual case, kept free of an object per task). */
function customHeaders(headers: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  let custom: Record<string, unknown> | undefined
  for (const key in headers) {
    if (CELERY_HEADERS.has(key)) continue
    ;(custom ??= {})[key] = headers[key]
  }
  return custom
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

/** A chord's header task: its end counts towards running the chord's body. */
function isChordPart(m: TaskRequest): boolean {
  return m.embed.chord !== null && m.group !== null
}

/** `ValueError('boom')`, as Celery's events and logs show an exception. */
function excRepr(exc: EncodedException): string {
  // kombu's EncodeError holds its cause, stored as the cause's repr: `EncodeError(TypeError('...'))`.
  if (exc.type === 'EncodeError' && exc.module === 'kombu.exceptions' && typeof exc.args[0] === 'string') return `EncodeError(${exc.args[0]})`
  return exceptionRepr({ exc_type: exc.type, exc_message: exc.args, exc_module: exc.module })
}

const SIGNUMS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGKILL: 9, SIGUSR1: 10, SIGUSR2: 12, SIGTERM: 15 }

function signum(signal: string | null): number | null {
  if (!signal) return null
  if (/^\d+$/.test(signal)) return Number(signal)
  return SIGNUMS[signal] ?? null
}
