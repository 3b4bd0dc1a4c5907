// The second room of the task path: a welcomed request is held unacked until
// its ETA (the consumer widens its prefetch by one for it, spec §1.6 step 4),
// then reserved until the pool has room and its task's rate limit gives a
// token (a cluster-wide limit's slot first, cluster-rate.ts); then it is
// handed off (hand-off.ts). Taken back what the broker took
// back with a lost channel, and handed back at shutdown what has not started.
import { setLongTimeout } from '../../app/index.js'
import { escapeControl } from '../../protocol/index.js'
import type { DedupReceipt } from './cluster/dedup-receipt.js'
import type { ClusterRate } from './cluster/cluster-rate.js'
import type { HandOff } from './hand-off.js'
import type { Holdings } from './holdings.js'
import type { TaskLimits } from './limits.js'
import type { Request } from './request.js'
import type { RunnerOptions } from './runner-options.js'
import type { Settler } from './settler.js'

export class Reservations {
  private paused = false
  private pumping = false
  /** While staged requests are being taken back at shutdown: nothing more goes to the pool. */
  private releasing = false

  constructor(
    private readonly o: RunnerOptions,
    private readonly holdings: Holdings,
    private readonly limits: TaskLimits,
    private readonly settler: Settler,
    private readonly handOff: HandOff,
    private readonly dedup: DedupReceipt,
    private readonly clusterRate: ClusterRate,
  ) {}

  /** Held unacked until its ETA, else reserved now. */
  hold(request: Request): void | Promise<void> {
    const eta = request.etaDate
    const wait = eta ? eta.getTime() - Date.now() : 0
    if (!eta || wait <= 0) return this.reserve(request)
    const scheduled = this.holdings.scheduled
    const timer = setLongTimeout(() => {
      scheduled.delete(request.id)
      this.o.onScheduledChange(scheduled.size)
      this.reserve(request)
    }, wait)
    scheduled.set(request.id, { request, timer })
    this.o.onScheduledChange(scheduled.size)
    // On Redis the visibility timeout then runs from the ETA, not from now.
    return request.delivery
      .deferVisibility?.(eta.getTime() / 1000)
      .catch((e: Error) => this.o.log.warning(`could not defer visibility of ${escapeControl(request.id)}: ${e.message}`))
  }

  private reserve(request: Request): void | Promise<void> {
    if (this.holdings.dropIfTakenBack(request)) return
    // A delayed task with a `tsq_dedup` header is claimed first: one replaced meanwhile is discarded.
    const claiming = this.dedup.atEta(request)
    if (claiming) return this.whileClaimed(request, claiming)
    this.enqueue(request)
  }

  /** Still held as scheduled while the store answers, so a shutdown meanwhile hands it back with the rest. */
  private async whileClaimed(request: Request, claiming: Promise<boolean>): Promise<void> {
    const scheduled = this.holdings.scheduled
    const entry = { request, timer: { clear: () => undefined } }
    scheduled.set(request.id, entry)
    const runs = await claiming
    if (scheduled.get(request.id) !== entry) return
    scheduled.delete(request.id)
    if (runs) this.enqueue(request)
    else this.holdings.wakeIdleWaiters()
  }

  private enqueue(request: Request): void {
    if (this.clusterRate.governs(request.name)) return this.clusterRate.admit(request)
    this.ready(request)
  }

  /** Reserved, and holding its cluster rate limit's slot where it has one: waits for the pool. */
  ready(request: Request): void {
    this.holdings.waiting.push(request)
    this.pump()
  }

  pause(): void {
    this.paused = true
  }

  resume(): void {
    this.paused = false
    this.pump()
  }

  /** Hands reserved requests to the pool while it has room and their rate limits allow. */
  pump(): void {
    if (this.pumping || this.releasing) return
    this.pumping = true
    try {
      const pool = this.o.pool
      const { active, staged, waiting } = this.holdings
      while (!this.paused && waiting.length > 0) {
        // Past its free slots, a pool that keeps its slots fed takes a few more (staged behind short tasks).
        const free = active.size + staged.size < pool.size
        if (!free && !pool.canPlace?.()) break
        const index = this.startable(free)
        if (index === -1) {
          const wait = Math.min(...waiting.map((r) => this.limits.secondsUntilToken(r.name)))
          // Not free: what waits may be a tracked task waiting for a slot, which the next task's end pumps.
          if (free || wait > 0) setTimeout(() => this.pump(), Math.max(5, wait * 1000)).unref()
          break
        }
        const request = index === 0 ? waiting.shift() : waiting.splice(index, 1)[0]
        // Staged, it stays reserved until the pool starts it.
        void this.handOff.start(request!, pool.place !== undefined && !this.tracksStarted(request!))
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
    const waiting = this.holdings.waiting
    for (let i = 0; i < waiting.length; i += 1) {
      const r = waiting[i]!
      if ((free || !this.tracksStarted(r)) && this.limits.takeToken(r.name) === 0) return i
    }
    return -1
  }

  /** track_started: STARTED is stored before the task runs, so such a task only goes to a free slot. */
  private tracksStarted(request: Request): boolean {
    return this.o.app.tasks.get(request.name)?.options.trackStarted === true
  }

  /** A cluster-wide limit is set in the cluster's store (resolves once it is there); a worker's, here. */
  setRateLimit(name: string, rate: string | number | null): void | Promise<void> {
    this.limits.setRateLimit(name, rate)
    this.pump()
    if (this.clusterRate.governs(name)) return this.clusterRate.setRate(name, rate)
  }

  /**
   * Drops every held request (waiting for its ETA, a rate-limit token or a pool
   * slot) whose delivery the broker took back, at once and with its timer.
   * Running tasks finish; their acks are dropped by the transport. Returns the
   * dropped requests.
   */
  dropTakenBack(): Request[] {
    const { scheduled, staged, waiting } = this.holdings
    const dropped: Request[] = []
    for (const [id, entry] of scheduled) {
      if (!entry.request.takenBack) continue
      entry.timer.clear()
      scheduled.delete(id)
      dropped.push(entry.request)
    }
    const scheduledDropped = dropped.length
    // Staged in the pool: taken back first (placement.returned() then drops them), unless they start meanwhile.
    const lostStaged = [...staged].filter((r) => r.takenBack)
    if (lostStaged.length > 0) void this.o.pool.unstage?.(lostStaged.map((r) => r.id))
    for (let i = waiting.length - 1; i >= 0; i -= 1) {
      const request = waiting[i]!
      if (!request.takenBack) continue
      waiting.splice(i, 1)
      dropped.push(request)
    }
    dropped.push(...this.clusterRate.dropTakenBack())
    if (scheduledDropped > 0) this.o.onScheduledChange(scheduled.size)
    if (dropped.length > 0) this.holdings.wakeIdleWaiters()
    return dropped
  }

  /** Hands back to the broker what was received and not started: held for an ETA, and reserved. */
  async releaseUnstarted(): Promise<number> {
    const { scheduled, staged, waiting } = this.holdings
    const held = [...scheduled.values()].map((s) => {
      s.timer.clear()
      return s.request
    })
    scheduled.clear()
    // Staged in the pool: taken back (or started) first, so none runs here after going back to the broker.
    if (staged.size > 0) {
      this.releasing = true
      try {
        await this.o.pool.unstage?.()
      } finally {
        this.releasing = false
      }
    }
    const all = [...held, ...this.clusterRate.releaseAll(), ...waiting.splice(0)]
    await Promise.all(all.map((r) => this.settler.settle(r, 'shutdown')))
    return all.length
  }
}
