// From a delivered message to a settled one: Celery's strategy
// (celery/worker/strategy.py) and request handling (celery/worker/request.py),
// as three rooms and one decision. Admission reads the message and refuses,
// dedupes or welcomes it; reservations hold it for its ETA and its rate limit,
// then hand it to the pool; outcomes record how its run ended; the settler
// acks, rejects or requeues it as settlementFor (settlement.ts) decides.
// This class wires them and is what the worker, its remote control and its
// shutdown see of the task path.
import type { Delivery } from '../../transport/index.js'
import { Admission } from './admission.js'
import { ClusterRate } from './cluster/cluster-rate.js'
import { ConcurrencyGate } from './cluster/concurrency-gate.js'
import { HandOff } from './hand-off.js'
import { Holdings, type ScheduledRequest } from './holdings.js'
import { TaskLimits, type TimeLimits } from './limits.js'
import { Outcomes } from './outcomes.js'
import type { Request } from './request.js'
import { Reservations } from './reservations.js'
import type { RunnerOptions } from './runner-options.js'
import { Settler } from './settler.js'

export { BROKER_QUEUE_HOLD_S, DEFAULT_ETA_DELAY_AFTER_S } from './admission.js'
export type { EtaDelayPolicy, RunnerOptions } from './runner-options.js'

export class TaskRunner {
  private readonly holdings: Holdings
  private readonly limits: TaskLimits
  private readonly settler: Settler
  private readonly outcomes: Outcomes
  private readonly reservations: Reservations
  private readonly admission: Admission
  private readonly gate: ConcurrencyGate

  constructor(o: RunnerOptions) {
    const next = (): void => this.reservations.pump()
    this.holdings = new Holdings(o.log)
    this.limits = new TaskLimits(o.app, { hard: o.timeLimit, soft: o.softTimeLimit })
    this.settler = new Settler(o.app, this.holdings, o.log, o.acksLate)
    this.outcomes = new Outcomes(o, this.holdings, this.limits, this.settler, next)
    const handOff = new HandOff(o, this.holdings, this.limits, this.settler, this.outcomes, next)
    const clusterRate = new ClusterRate(o, this.holdings, this.limits, this.settler, (r) => this.reservations.ready(r))
    this.reservations = new Reservations(o, this.holdings, this.limits, this.settler, handOff, this.outcomes.dedup, clusterRate)
    this.admission = new Admission(o, this.holdings, this.settler, this.reservations, this.outcomes)
    const { holdings } = this
    this.gate = new ConcurrencyGate(o, {
      held: (id) => holdings.held(id),
      room: () => o.pool.size - holdings.active.size - holdings.staged.size - holdings.waiting.length,
      admit: (d) => this.admission.receive(d),
    })
    this.outcomes.afterRun = (request) => this.gate.done(request)
  }

  /** The consumer's handler: a promise only when there is something to wait for (admission.ts). */
  onDelivery(delivery: Delivery): void | Promise<void> {
    const keyed = this.gate.ruleOf(delivery)
    return keyed ? this.gate.receive(delivery, keyed) : this.admission.receive(delivery)
  }

  /** The concurrency keys of this worker's tasks: backlog, running and limit (`inspect concurrency`). */
  concurrencyStats(): ReturnType<ConcurrencyGate['stats']> {
    return this.gate.stats()
  }

  get active(): ReadonlyMap<string, Request> {
    return this.holdings.active
  }

  get scheduled(): ReadonlyMap<string, ScheduledRequest> {
    return this.holdings.scheduled
  }

  /** Received and due, not started: staged in a pool slot, then waiting for the pool. */
  get reserved(): Request[] {
    return this.holdings.reserved
  }

  /** Reserved and due, not yet handed to the pool (waiting for a slot or its rate limit's token). */
  get waiting(): readonly Request[] {
    return this.holdings.waiting
  }

  get total(): Readonly<Record<string, number>> {
    return this.outcomes.total
  }

  get processed(): number {
    return this.outcomes.processed
  }

  get rateLimits(): TaskLimits['rateLimits'] {
    return this.limits.rateLimits
  }

  get timeLimits(): Map<string, TimeLimits> {
    return this.limits.timeLimits
  }

  pause(): void {
    this.reservations.pause()
  }

  resume(): void {
    this.reservations.resume()
  }

  /** Hands reserved requests to the pool while it has room (after the pool grew, say). */
  pump(): void {
    this.reservations.pump()
  }

  setRateLimit(name: string, rate: string | number | null): void | Promise<void> {
    return this.reservations.setRateLimit(name, rate)
  }

  /**
   * The broker took back what a lost channel held: what was settled just
   * before counts as settled there, and the held requests it took back are
   * dropped (returned). Running tasks finish; their acks are dropped by the transport.
   */
  dropLost(): Request[] {
    this.settler.rememberRecentlySettled()
    return this.reservations.dropTakenBack()
  }

  /** Hands back what was fetched but not started: held for an ETA, and reserved. */
  async releaseUnstarted(): Promise<number> {
    this.gate.stop()
    const n = await this.reservations.releaseUnstarted()
    this.gate.freeUnheld()
    return n
  }

  /** Cold shutdown: the running requests' messages go back to the queue (handedBack), and their outcomes are ignored. */
  handBackRunning(): { requests: Request[]; handedBack: Promise<unknown> } {
    const requests = [...this.holdings.active.values()].filter((r) => !r.restored)
    for (const r of requests) r.restored = true
    return { requests, handedBack: Promise.all(requests.map((r) => this.settler.settle(r, 'shutdown'))) }
  }

  /** Resolves when no task is running or reserved, and every settlement has gone out. */
  idle(): Promise<void> {
    return this.holdings.idle()
  }
}
