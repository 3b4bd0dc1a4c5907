// The worker's side of a cluster-wide rate limit (rateLimitScope 'cluster'):
// before a reserved request of such a task may start, it takes a slot from
// the task's bucket in Redis (locks/'s rate store), shared by every tsq
// worker, one take per task at a time from this worker, in arrival order. A
// slot now: it starts; a slot within the bucket's horizon (500 ms): held till
// then. No slot within the horizon: asked again when there is room, held
// meanwhile (within the prefetch window, nothing past it), or, when that is
// more than 2 s away (slow rates), deferred (defer.ts) to a turn the bucket
// books for it (deferred ones come back a slot apart), so the worker takes
// the next. A deferred copy goes to the back of its queue, so a slot is never
// deferred with it: on a deep queue it would come back long after its slot.
// `control rate_limit` sets the rate in the store, for the cluster.
import { lockSettings } from '../../../app/index.js'
import { intervalUsOf, openRateStore, type RateStore } from '../../../locks/index.js'
import { escapeControl, taskLabel } from '../../../protocol/index.js'
import { deferMessage, DeferredRelease, type DeferContext } from './defer.js'
import type { Holdings } from '../holdings.js'
import { parseRate, type TaskLimits } from '../limits.js'
import type { Request } from '../request.js'
import type { RunnerOptions } from '../runner-options.js'
import type { Settler } from '../settler.js'

/** No slot within the horizon: held and asked again, unless the wait is longer than this; then deferred to its turn. */
const DEFER_REFUSED_AFTER_MS = 2000
/** The bucket's store out of reach: asked again after this. */
const STORE_RETRY_MS = 1000

export class ClusterRate {
  private readonly timers = new Map<Request, NodeJS.Timeout>()
  /** Per task, what waits to take a slot, in arrival order: one take per task at a time from this worker. */
  private readonly lines = new Map<string, Request[]>()
  /** Per task, the request taking now (or waiting to ask again after a refusal). */
  private readonly heads = new Map<string, Request>()
  private closed = false
  private store: Promise<RateStore> | null = null
  private readonly defer: DeferContext
  private warnedStore = false
  /** The broker can hold a message for a while (parking lot, delayed delivery). */
  private readonly canDefer: boolean

  constructor(
    private readonly o: RunnerOptions,
    private readonly holdings: Holdings,
    private readonly limits: TaskLimits,
    settler: Settler,
    /** Hands a request that holds its slot on to the pool's queue. */
    private readonly ready: (request: Request) => void,
  ) {
    // No transport: a unit test's runner that never defers.
    const parking = o.transport?.parking
    const release = parking ? new DeferredRelease(parking, o.log) : undefined
    this.canDefer = parking !== undefined || o.transport?.publishDelayed !== undefined
    this.defer = { transport: o.transport, settler, log: o.log, ...(release ? { release } : {}) }
    // Every worker of a cluster-limited task watches the lot, so a dead one's deferred copies come back too.
    if ([...o.app.tasks.keys()].some((name) => this.governs(name))) {
      release?.start()
      void this.storeOf().catch((error: Error) => o.log.error(`Cluster rate limits: ${escapeControl(error.message)}`))
    }
  }

  governs(name: string): boolean {
    return this.limits.scopeOf(name) === 'cluster'
  }

  /** Takes over a reserved request of a cluster-limited task until it holds a slot (then `ready`), or defers it. */
  admit(request: Request): void {
    this.holdings.limited.add(request)
    const line = this.lines.get(request.name)
    if (line) line.push(request)
    else this.lines.set(request.name, [request])
    this.nextTake(request.name)
  }

  /** The next request in `name`'s line takes, unless one is taking (or waiting to ask again) already. */
  private nextTake(name: string): void {
    if (this.closed || this.heads.has(name)) return
    const line = this.lines.get(name)
    while (line && line.length > 0) {
      const request = line.shift()!
      if (!this.stillHeld(request)) continue
      this.heads.set(name, request)
      void this.take(request)
      return
    }
    this.lines.delete(name)
  }

  /** `request` no longer heads its line: the next one takes. */
  private done(request: Request): void {
    if (this.heads.get(request.name) !== request) return
    this.heads.delete(request.name)
    this.nextTake(request.name)
  }

  /** `control rate_limit` for a cluster-limited task: the rate every worker's next take reads. */
  async setRate(name: string, rate: string | number | null): Promise<void> {
    const intervalUs = intervalUsOf(parseRate(rate))
    const store = await this.storeOf()
    await store.setRate(name, { text: rate === null ? '' : String(rate), intervalUs })
  }

  private storeOf(): Promise<RateStore> {
    if (!this.store) {
      this.store = this.o.rateStore ? Promise.resolve(this.o.rateStore) : openRateStore(lockSettings(this.o.app))
      this.store.catch(() => (this.store = null))
    }
    return this.store
  }

  private async take(request: Request): Promise<void> {
    let answer
    try {
      const store = await this.storeOf()
      const intervalUs = intervalUsOf(parseRate(this.limits.defaultRateOf(request.name)))
      answer = await store.take(request.name, intervalUs, this.canDefer ? { deferAfterMs: DEFER_REFUSED_AFTER_MS } : {})
    } catch (error) {
      if (!this.warnedStore)
        this.o.log.error(
          `Task ${taskLabel(request.name, request.id)}: its cluster rate limit's bucket is out of reach (${escapeControl((error as Error).message)}); held, asking again every second`,
        )
      this.warnedStore = true
      return this.after(request, STORE_RETRY_MS, () => void this.take(request))
    }
    this.warnedStore = false
    if (!this.stillHeld(request)) return this.done(request)
    const waitMs = answer.waitUs / 1000
    if (answer.kind === 'deferred') {
      // Booked to come back at its turn: the line moves on meanwhile.
      this.done(request)
      if (!(await this.deferred(request, waitMs))) this.after(request, waitMs, () => this.readmit(request))
      return
    }
    // Still heading the line: the others wait behind it, and ask after it.
    if (answer.kind === 'refused') return this.after(request, waitMs + Math.random() * 2, () => void this.take(request))
    this.done(request)
    if (answer.kind === 'now') return this.start(request)
    this.after(request, waitMs, () => this.start(request))
  }

  /** Back to the end of its line (a deferral the broker refused). */
  private readmit(request: Request): void {
    this.holdings.limited.delete(request)
    this.admit(request)
  }

  /** Out of `limited` before the copy is out: a copy back soon must not look like a duplicate of one held here. */
  private async deferred(request: Request, waitMs: number): Promise<boolean> {
    this.holdings.limited.delete(request)
    if (await deferMessage(this.defer, request, waitMs)) {
      this.holdings.wakeIdleWaiters()
      return true
    }
    this.holdings.limited.add(request)
    return false
  }

  private after(request: Request, ms: number, then: () => void): void {
    const timer = setTimeout(
      () => {
        this.timers.delete(request)
        if (this.stillHeld(request)) then()
        else this.done(request)
      },
      Math.max(0, ms),
    )
    this.timers.set(request, timer)
  }

  private start(request: Request): void {
    this.holdings.limited.delete(request)
    this.ready(request)
  }

  /** False (and forgotten) when the broker took its delivery back, or shutdown handed it back. */
  private stillHeld(request: Request): boolean {
    if (!this.holdings.limited.has(request)) return false
    if (!this.holdings.dropIfTakenBack(request)) return true
    this.holdings.limited.delete(request)
    this.holdings.wakeIdleWaiters()
    return false
  }

  /** Forgets the held requests whose delivery the broker took back; returns them. */
  dropTakenBack(): Request[] {
    return this.forget((r) => r.takenBack)
  }

  /** At shutdown: every held request, to hand back; the lot is no longer watched. */
  releaseAll(): Request[] {
    this.closed = true
    this.defer.release?.stop()
    return this.forget(() => true)
  }

  private forget(which: (r: Request) => boolean): Request[] {
    const out = [...this.holdings.limited].filter(which)
    for (const r of out) {
      const timer = this.timers.get(r)
      if (timer) clearTimeout(timer)
      this.timers.delete(r)
      this.holdings.limited.delete(r)
    }
    for (const r of out) this.done(r)
    return out
  }
}
