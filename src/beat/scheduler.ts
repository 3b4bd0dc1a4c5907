// The beat loop (spec §8.1): find due entries, reserve the runs in the store,
// send, sleep until the next due time or `maxInterval`. Reserving before
// sending (as Celery's tick does) means a run is never sent twice: the store's
// atomic run-count check decides, together with the lease (fencing) or the
// AMQP mutex when several beats share one store. Under the lease (or with no
// HA) the runs due in one pass are reserved together, one atomic store call
// that checks the fence once, and then sent with their publishes overlapped.
import { pyRepr, type BodyEncoder } from '../protocol/index.js'
import { clientOrigin, DEFAULT_QUEUE, sendTask, type SendTaskOptions } from '../client/index.js'
import { routedSend, type Route } from '../config/index.js'
import type { AppSignals } from '../app/index.js'
import type { Transport } from '../transport/index.js'
import { scheduleOf, type Entry } from './entry.js'
import type { RedisLease } from './lease.js'
import type { AmqpMutex } from './mutex.js'
import type { BeatStore } from './store.js'

export type HaMode = 'none' | 'lease' | 'mutex'

export interface BeatLog {
  debug(m: string): void
  info(m: string): void
  warning(m: string): void
  error(m: string): void
}

export interface BeatOptions {
  store: BeatStore
  transport: Transport
  tz: string
  /** Where an entry that names no queue goes: the app's task_routes, else its task_default_queue. */
  routeFor?: (taskName: string) => Route
  /** The app's queue definitions and delivery mode (task_queues, task_default_delivery_mode), so a send declares its queue as the workers do. */
  sendDefaults?: Pick<SendTaskOptions, 'resolveQueue' | 'deliveryMode'>
  /** The app's signals: before/after_task_publish around each send. */
  signals?: AppSignals
  /** The app's task_serializer (signed under auth), as every sender of the app writes bodies. */
  encoder?: BodyEncoder
  /** Seconds: the longest sleep, so changes are seen within it. */
  maxInterval: number
  ha: HaMode
  lease?: RedisLease
  mutex?: AmqpMutex
  log: BeatLog
  now?: () => number
  /** Called after each send (tests, bench). */
  onSent?: (entry: string, taskId: string, runCount: number) => void
}

/** Seconds a follower waits between attempts to take the lease. */
function followerPoll(lockTimeoutMs: number): number {
  return Math.min(1, Math.max(0.1, lockTimeoutMs / 5000))
}

function stringOr(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined
}

export function taskOptionsOf(entry: Entry, routeFor?: (taskName: string) => Route): SendTaskOptions {
  const d = entry.definition
  const o = d.options
  const out: SendTaskOptions = { args: d.args, kwargs: d.kwargs, argsrepr: pyRepr(d.args) }
  const given = { queue: stringOr(o.queue), exchange: stringOr(o.exchange), routingKey: stringOr(o.routing_key) }
  const { queue, exchange, routingKey } = routedSend(given, () => routeFor?.(d.task))
  if (queue !== undefined) out.queue = queue
  if (exchange !== undefined) out.exchange = exchange
  if (routingKey !== undefined) out.routingKey = routingKey
  if (typeof o.priority === 'number') out.priority = o.priority
  if (typeof o.expires === 'number' || typeof o.expires === 'string') out.expires = o.expires
  if (o.headers && typeof o.headers === 'object') out.headers = o.headers as Record<string, unknown>
  if (typeof o.time_limit === 'number') out.timeLimit = o.time_limit
  if (typeof o.soft_time_limit === 'number') out.softTimeLimit = o.soft_time_limit
  return out
}

/** A due run waiting for its reservation. */
interface DueRun {
  entry: Entry
  ranAt: number
  nextDueAt: number
}

/** Runs reserved per store call; also the largest burst reserved before its sends. */
const RESERVE_BATCH = 500
/** Publishes in flight at once while a burst is sent. */
const SEND_WINDOW = 64

function destinationOf(o: SendTaskOptions): string {
  return o.exchange ? `exchange ${o.exchange}` : `queue ${o.queue ?? DEFAULT_QUEUE}`
}

export class Beat {
  private stopped = false
  /** Where a send has succeeded: the queue is declared, so sends there can overlap. */
  private readonly destinations = new Set<string>()
  private wake: (() => void) | null = null
  private readonly now: () => number
  private readonly origin: string
  sent = 0
  /** The last tick's error, null once one goes through: what beat's /readyz reads. */
  lastTickError: string | null = null
  /** When the tick under way started (a store or broker that does not answer holds it); null between ticks. */
  tickSince: number | null = null

  constructor(private readonly o: BeatOptions) {
    this.now = o.now ?? Date.now
    this.origin = clientOrigin()
  }

  /** What a send of this entry carries; the origin is worked out once, not per send. */
  private optionsOf(entry: Entry): SendTaskOptions {
    return { ...this.o.sendDefaults, ...taskOptionsOf(entry, this.o.routeFor), origin: this.origin }
  }

  stop(): void {
    this.stopped = true
    this.wake?.()
  }

  /** Wake a sleeping loop now (a `tsq schedule` change arrived). */
  poke(): void {
    this.wake?.()
  }

  async run(): Promise<void> {
    while (!this.stopped) {
      let delay: number
      this.tickSince = Date.now()
      try {
        delay = await this.tick()
        this.lastTickError = null
      } catch (error) {
        this.lastTickError = (error as Error).message
        this.o.log.error(`beat: tick failed: ${(error as Error).message}`)
        delay = Math.min(this.o.maxInterval, 1)
      }
      this.tickSince = null
      if (this.stopped) break
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.max(0, delay * 1000))
        function done() {
          clearTimeout(timer)
          resolve()
        }
        this.wake = done
      })
      this.wake = null
    }
  }

  private async holdLease(): Promise<boolean> {
    const lease = this.o.lease!
    const change = await lease.refresh()
    if (change === 'acquired') this.o.log.info(`beat: took the lease ${lease.key} (fence ${lease.fence}); this beat now sends`)
    if (change === 'lost') this.o.log.warning(`beat: lost the lease ${lease.key}; standing by`)
    return lease.held !== null
  }

  /** One pass; returns the seconds to sleep. */
  async tick(): Promise<number> {
    const { store, log, maxInterval } = this.o
    let cap = maxInterval
    let renewedAt = 0
    if (this.o.ha === 'lease') {
      const lease = this.o.lease!
      if (!(await this.holdLease())) return followerPoll(lease.timeoutMs)
      // Real time, as the lease's own expiry (the injected clock is the schedule's).
      renewedAt = Date.now()
      cap = Math.min(cap, lease.timeoutMs / 3000)
    }
    const started = this.now()
    const batch = await store.due(started)
    let next = cap
    if (batch.nextDueAt !== null) next = Math.min(next, Math.max(0, (batch.nextDueAt - started) / 1000))
    // Due runs wait here and are reserved together: one store call per chunk.
    let pending: DueRun[] = []
    const flush = async (): Promise<'fenced' | null> => {
      const runs = pending
      pending = []
      if (runs.length === 0 || this.stopped) return null
      if (this.o.ha === 'lease' && Date.now() - renewedAt > this.o.lease!.timeoutMs / 3) {
        // Long passes (many due at once) renew the lease as they go.
        if (!(await this.holdLease())) return 'fenced'
        renewedAt = Date.now()
      }
      return this.sendReserved(runs)
    }
    for (const entry of batch.entries) {
      if (this.stopped) break
      const d = entry.definition
      const now = this.now()
      if (!d.enabled) {
        await store.reschedule(d.name, now + 5000)
        continue
      }
      let schedule
      try {
        schedule = scheduleOf(d.schedule, this.o.tz)
      } catch (error) {
        log.error(`beat: entry ${d.name}: ${(error as Error).message}`)
        await store.reschedule(d.name, now + maxInterval * 1000)
        continue
      }
      const state = entry.meta.lastRunAt === null ? { due: true, next: 0 } : schedule.isDue(entry.meta.lastRunAt, now)
      if (!state.due) {
        const dueAt = schedule.dueAt(entry.meta.lastRunAt!)
        if (dueAt - now > 1000) await store.reschedule(d.name, dueAt)
        next = Math.min(next, state.next)
        continue
      }
      const nextDueAt = schedule.dueAt(now)
      next = Math.min(next, Math.max(0, (nextDueAt - now) / 1000))
      if (this.o.ha === 'mutex') {
        // The mutex is one exclusive queue per run: nothing to batch.
        if ((await this.sendWithMutex(entry, now, nextDueAt)) === 'retry') next = Math.min(next, 0.05)
        continue
      }
      pending.push({ entry, ranAt: now, nextDueAt })
      if (pending.length >= RESERVE_BATCH && (await flush()) === 'fenced') return 0
    }
    if ((await flush()) === 'fenced') return 0
    return Math.max(0, next - 0.01)
  }

  private async send(entry: Entry, runCount: number, options = this.optionsOf(entry)): Promise<void> {
    const d = entry.definition
    this.o.log.info(`Scheduler: Sending due task ${d.name} (${d.task})`)
    const id = await sendTask(this.o.transport, d.task, options, this.o.signals, this.o.encoder)
    this.sent += 1
    this.o.onSent?.(d.name, id, runCount)
    this.o.log.debug(`beat: ${d.name} run ${runCount} sent as ${id}`)
  }

  /**
   * Reserves the runs in one store call (the fence checked once, atomically
   * with every run's count check), then sends the ones that are ours.
   */
  private async sendReserved(runs: DueRun[]): Promise<'fenced' | null> {
    const fence = this.o.ha === 'lease' ? this.o.lease!.held : undefined
    if (fence === null) return 'fenced'
    const outcomes = await this.o.store.reserveAll(
      runs.map(({ entry, ranAt, nextDueAt }) => ({
        name: entry.definition.name,
        expectedCount: entry.meta.totalRunCount,
        ranAt,
        nextDueAt,
      })),
      fence,
    )
    const ours: DueRun[] = []
    const fenced: string[] = []
    runs.forEach((run, i) => {
      const outcome = outcomes[i]
      const d = run.entry.definition
      if (outcome === 'ok') ours.push(run)
      else if (outcome === 'fenced') fenced.push(d.name)
      else this.o.log.debug(`beat: ${d.name} run ${run.entry.meta.totalRunCount} not ours (${outcome})`)
    })
    if (fenced.length) {
      const names = fenced.length <= 3 ? fenced.join(', ') : `${fenced.slice(0, 3).join(', ')} and ${fenced.length - 3} more`
      this.o.log.warning(`beat: the lease moved to another beat; not sending ${names}`)
      this.o.lease?.drop()
    }
    // Runs reserved before the fence fell (an earlier chunk) are ours: sent all the same.
    await this.sendAll(ours)
    return fenced.length ? 'fenced' : null
  }

  /**
   * Sends reserved runs with up to SEND_WINDOW publishes in flight, so they
   * share round trips as a pipeline would. The first send to a destination
   * goes alone, as it declares the queue. If a send fails, no more are
   * started and those in flight are let finish. The failed run stays spent,
   * as it did when runs went one at a time (at most once, as Celery's beat),
   * and the reservations of the runs never started are given back, so a
   * later tick sends them instead of their being lost with the failure.
   */
  private async sendAll(runs: DueRun[]): Promise<void> {
    const inFlight = new Set<Promise<void>>()
    const destinations = this.destinations
    let failure: { error: unknown; run: DueRun } | null = null
    let started = 0
    for (const run of runs) {
      if (failure !== null) break
      const n = run.entry.meta.totalRunCount
      let options: SendTaskOptions
      try {
        options = this.optionsOf(run.entry)
      } catch (error) {
        // A route that throws fails this send as a broker error would.
        failure = { error, run }
        started += 1
        break
      }
      const dest = destinationOf(options)
      const p: Promise<void> = this.send(run.entry, n, options).then(
        () => {
          destinations.add(dest)
        },
        (error: unknown) => {
          failure ??= { error, run }
        },
      )
      started += 1
      const tracked = p.finally(() => inFlight.delete(tracked))
      inFlight.add(tracked)
      if (!destinations.has(dest)) await Promise.all(inFlight)
      else if (inFlight.size >= SEND_WINDOW) await Promise.race(inFlight)
    }
    await Promise.all(inFlight)
    if (failure === null) return
    const { error, run } = failure as { error: unknown; run: DueRun }
    const unsent = runs.slice(started)
    if (unsent.length) {
      const given = await this.o.store
        .release(
          unsent.map(({ entry, ranAt, nextDueAt }) => ({
            name: entry.definition.name,
            expectedCount: entry.meta.totalRunCount,
            ranAt,
            nextDueAt,
            previous: entry.meta,
          })),
        )
        .catch(() => 0)
      this.o.log.warning(`beat: ${unsent.length} reserved run(s) not sent after a failed send; ${given} given back for a later tick`)
    }
    throw Object.assign(
      new Error(`sending ${run.entry.definition.name} run ${run.entry.meta.totalRunCount}: ${(error as Error)?.message ?? String(error)}`),
      { cause: error },
    )
  }

  private async sendWithMutex(entry: Entry, now: number, nextDueAt: number): Promise<'sent' | 'skipped' | 'retry'> {
    const d = entry.definition
    const n = entry.meta.totalRunCount
    const release = await this.o.mutex!.tryLock(d.name, n)
    if (!release) {
      this.o.log.debug(`beat: ${d.name} run ${n} is another beat's (mutex held)`)
      return 'retry'
    }
    try {
      // The winner raises the count before it frees the queue, so a fresh read
      // here tells whether run N already went out.
      const fresh = await this.o.store.get(d.name)
      if (!fresh || !fresh.definition.enabled || fresh.meta.totalRunCount !== n) return 'skipped'
      await this.send(fresh, n)
      const outcome = await this.o.store.reserve({ name: d.name, expectedCount: n, ranAt: now, nextDueAt })
      if (outcome !== 'ok') this.o.log.warning(`beat: ${d.name} run ${n} sent but the store said ${outcome}`)
      return 'sent'
    } finally {
      await release()
    }
  }
}
