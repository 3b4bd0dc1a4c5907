// Sends what the decision (settlement.ts) says for each fate, without holding
// the task's slot, and remembers what it settled on a channel the broker has
// since closed: the broker's redelivered copy then takes that settlement
// instead of running again. A settlement that fails leaves the message with
// the broker, which delivers it again (at-least-once), as after a lost connection.
import type { App } from '../../app/index.js'
import type { Logger } from '../../process/index.js'
import type { TaskRequest } from '../../protocol/index.js'
import { taskLabel } from '../../protocol/index.js'
import type { Delivery } from '../../transport/index.js'
import type { Holdings } from './holdings.js'
import type { Request } from './request.js'
import { settlementFor, type Fate, type Settlement, type SettlementOptions, type WorkerSettlementSettings } from './settlement.js'

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

/** What a remembered settlement sends again: an ack, or a reject without requeue (a requeue is never remembered). */
type Final = 'ack' | 'reject'

const NO_OPTIONS: SettlementOptions = {}
const SENT: Promise<void> = Promise.resolve()

export class Settler {
  /**
   * Tasks that ended while the channel that delivered them was gone, so their
   * ack never reached the broker: id → how they were settled. The broker's
   * redelivered copy is settled the same way instead of running twice.
   */
  private readonly settledOnLost = new Map<string, { retries: number; how: Final; at: number }>()
  private readonly recentlySettled: Array<{ id: string; retries: number; how: Final; at: number } | undefined> = new Array(
    RECENTLY_SETTLED_RING,
  )
  private recentlySettledNext = 0
  private readonly worker: WorkerSettlementSettings
  /** One function for every settlement, not a closure per task. */
  private readonly sent = (): void => {
    this.holdings.settling -= 1
    this.holdings.wakeIdleWaiters()
  }

  constructor(
    private readonly app: App,
    private readonly holdings: Holdings,
    private readonly log: Logger,
    acksLate: boolean,
  ) {
    this.worker = { acksLate }
  }

  /** What a fate means for this request's message, by its task's options and the worker's. */
  settlementOf(request: Request, fate: Fate): Settlement {
    return settlementFor(fate, this.app.tasks.get(request.name)?.options ?? NO_OPTIONS, this.worker)
  }

  /**
   * Settles a held request's message as its fate says. Resolves once the
   * broker has it (or it failed, logged); nothing needs to wait for that but
   * shutdown, which idle() covers.
   */
  settle(request: Request, fate: Fate): Promise<void> {
    const how = this.settlementOf(request, fate)
    if (how === 'hold') return SENT
    // A retry's new copy is out already (outcomes.ts): this one is acked.
    const verb = how === 'retry' ? 'ack' : how
    const m = request.message
    const successor = request.successor
    if (successor) {
      // The broker's other copy of this run takes its outcome; the run's own
      // delivery is settled too while it is still live (a duplicate), not once it is gone.
      this.track(sendTo(successor, verb))
      if (request.takenBack) {
        request.settled = true
        return SENT
      }
    }
    if (verb !== 'requeue' && !request.settled) {
      if (request.takenBack) this.rememberSettledOnLost(m, verb)
      else this.noteSettled(m, verb)
    }
    return this.track(verb === 'ack' ? request.ack() : request.reject(verb === 'requeue'), (error) => {
      this.log.error(`Could not ${verb} ${taskLabel(m.task, m.id)}, the broker will deliver it again: ${(error as Error).message}`)
      this.sent()
    })
  }

  /** A message that never became a held request (refused on arrival, a second copy): settled by its fate alone. */
  settleDelivery(delivery: Delivery, fate: Fate): Promise<void> {
    const how = settlementFor(fate, NO_OPTIONS, this.worker)
    return how === 'hold' ? SENT : this.track(sendTo(delivery, how === 'retry' ? 'ack' : how))
  }

  /**
   * The broker's copy of a task that ended here on a channel since closed: it
   * is settled as that run was (the settlement decided then), not run again.
   * True when it was.
   */
  settleAsBefore(message: TaskRequest, delivery: Delivery): boolean {
    const settled = this.settledOnLost.get(message.id)
    if (!settled || settled.retries !== message.retries) return false
    this.settledOnLost.delete(message.id)
    this.log.info(
      `Task ${taskLabel(message.task, message.id)} delivered again after it ended on a closed channel: settled (${settled.how}), not run again`,
    )
    this.track(sendTo(delivery, settled.how))
    return true
  }

  /**
   * The broker closed a channel: an ack sent on it just before may not have
   * reached the broker, which then delivers the task again. What this worker
   * settled in the moments before it noticed counts as settled on the lost
   * channel, so the redelivered copies take that outcome instead of running.
   */
  rememberRecentlySettled(): void {
    const since = Date.now() - RECENTLY_SETTLED_MS
    for (const entry of this.recentlySettled) {
      if (entry && entry.at >= since && !this.settledOnLost.has(entry.id))
        this.settledOnLost.set(entry.id, { retries: entry.retries, how: entry.how, at: entry.at })
    }
  }

  /** A ring of the last settlements, for rememberRecentlySettled: a slot written per task, no allocation beyond it. */
  private noteSettled(m: TaskRequest, how: Final): void {
    this.recentlySettled[this.recentlySettledNext] = { id: m.id, retries: m.retries, how, at: Date.now() }
    this.recentlySettledNext = (this.recentlySettledNext + 1) % RECENTLY_SETTLED_RING
  }

  private rememberSettledOnLost(m: TaskRequest, how: Final): void {
    const now = Date.now()
    for (const [id, entry] of this.settledOnLost) {
      if (this.settledOnLost.size < SETTLED_ON_LOST_MAX && now - entry.at < SETTLED_ON_LOST_TTL_MS) break
      this.settledOnLost.delete(id)
    }
    this.settledOnLost.set(m.id, { retries: m.retries, how, at: now })
  }

  /** Counts `sending` until it settles; a failure goes to `onFailure` (silent by default). */
  private track(sending: Promise<void>, onFailure: (error: unknown) => void = this.sent): Promise<void> {
    this.holdings.settling += 1
    return sending.then(this.sent, onFailure)
  }
}

/** Sends a settlement on a delivery that is not a held request's own. */
function sendTo(delivery: Delivery, how: 'ack' | 'reject' | 'requeue'): Promise<void> {
  try {
    return how === 'ack' ? delivery.ack() : delivery.reject({ requeue: how === 'requeue' })
  } catch (error) {
    return Promise.reject(error)
  }
}
