// This transport's share of the ack emulation: which deliveries it handed out and
// has not seen settled, so the prefetch window and close({requeueUnacked}) are right.
import type { HeldDelivery } from './deliveries.js'
import type { ListConsumer } from './list-consumers.js'
import type { UnackedStore } from './unacked.js'

/**
 * One delivery this transport handed out and has not seen settled. It is its
 * own settler, with methods, not closures: the settler, its once-only guard,
 * isLive and defer were a dozen closures, contexts and objects per message,
 * a visible share of a drain's allocations (and so of its GC).
 */
class Outstanding implements HeldDelivery {
  /** Restored by a visibility-timeout pass (any process's): the broker delivers it again. */
  lost = false
  /** Where it sits in `outstanding`; -1 when not there. */
  at = -1
  /** Settle once: a second ack or reject of the same delivery is a no-op, as a retry-safe caller expects. */
  state: 'open' | 'busy' | 'done' = 'open'

  constructor(
    private readonly tracker: AckTracker,
    readonly tag: string,
    readonly consumer: ListConsumer,
    /** The `unacked_index` score this delivery was given (its delivery time, or the time it was deferred to). */
    public score: number,
    /** Its place in delivery order (removals reorder `outstanding`). */
    readonly seq: number,
  ) {}

  isLive(): boolean {
    return !this.lost
  }

  defer(untilUnixSeconds: number): Promise<void> {
    this.score = untilUnixSeconds
    return this.tracker.deferred(this.tag, untilUnixSeconds)
  }

  ack(): Promise<void> {
    return this.tracker.settle(this, 'ack')
  }

  reject(requeue: boolean): Promise<void> {
    return this.tracker.settle(this, requeue)
  }
}

export interface AckTrackerHooks {
  /** Throws when the transport can no longer settle (closed). */
  assertOpen(): void
  /** A window slot freed up. */
  settled(): void
  classify(error: unknown, where: string): Error
}

export class AckTracker {
  // Records, not a map by tag: a message restored by visibility timeout and
  // popped again carries the same tag twice. An array each record knows its
  // place in (removal swaps the last one in), not a Set: a Set filled to the
  // window and emptied again on every batch was rehashed each time, a
  // visible share of a drain's CPU.
  private readonly outstanding: Outstanding[] = []
  private delivered = 0

  constructor(
    private readonly unacked: UnackedStore,
    private readonly hooks: AckTrackerHooks,
  ) {}

  /**
   * Records the delivery in `unacked` (kombu QoS.append) and returns how to
   * settle it. A delivery the claim script already recorded is tracked
   * without a promise: on the drain's hot path each promise and await was a
   * visible share of a noop task's cost.
   */
  track(
    consumer: ListConsumer,
    tag: string,
    raw: string,
    exchange: string,
    routingKey: string,
    alreadyRecorded = false,
  ): HeldDelivery | Promise<HeldDelivery> {
    // At or after the score the claim wrote, which is all findLost needs to know.
    const record = new Outstanding(this, tag, consumer, Date.now() / 1000, this.delivered++)
    this.hold(record)
    if (alreadyRecorded) return record
    return this.unacked.add(tag, raw, exchange, routingKey).then(
      () => record,
      (error: unknown) => {
        this.release(record)
        throw this.hooks.classify(error, `record unacked ${tag}`)
      },
    )
  }

  private hold(record: Outstanding): void {
    record.consumer.inFlight += 1
    if (record.at === -1) record.at = this.outstanding.push(record) - 1
  }

  private release(record: Outstanding): void {
    record.consumer.inFlight -= 1
    this.detach(record)
  }

  private detach(record: Outstanding): void {
    const at = record.at
    if (at === -1) return
    record.at = -1
    const last = this.outstanding.pop()!
    if (last === record) return
    this.outstanding[at] = last
    last.at = at
  }

  /**
   * Writes a settlement, once: the slot frees at once, the write follows. A
   * refused write holds the delivery again, and the same settlement can be
   * tried again. One promise per settlement: not an async function, and the
   * once-only guard lives here rather than in a then() of its own.
   */
  settle(record: Outstanding, what: boolean | 'ack'): Promise<void> {
    if (record.state !== 'open') return Promise.resolve()
    try {
      this.hooks.assertOpen()
    } catch (error) {
      return Promise.reject(error)
    }
    record.state = 'busy'
    this.release(record)
    // Its tag now names the restored copy, which another delivery holds: not ours to settle.
    if (record.lost) {
      record.state = 'done'
      this.hooks.settled()
      return Promise.resolve()
    }
    const { tag } = record
    // kombu: reject(requeue) restores leftmost (LPUSH, back of the queue); reject(no requeue) is an ack.
    const settling = what === true ? this.unacked.restore(tag, { leftmost: true }) : this.unacked.remove(tag)
    return settling.then(
      () => {
        record.state = 'done'
        this.hooks.settled()
      },
      (error: unknown) => {
        record.state = 'open'
        this.hold(record)
        throw this.hooks.classify(error, what === 'ack' ? `ack ${tag}` : `reject ${tag}`)
      },
    )
  }

  /** A held delivery's visibility runs from `untilUnixSeconds` (ZADD XX: only while it is still unacked). */
  deferred(tag: string, untilUnixSeconds: number): Promise<void> {
    return this.unacked.defer(tag, untilUnixSeconds)
  }

  /**
   * Marks and returns the held deliveries that a visibility-timeout pass has
   * restored meanwhile: gone from `unacked_index`, or there with a later score
   * (restored and delivered again, under the same tag). Only those old enough
   * to be restored are asked about, in one pipeline.
   */
  async findLost(visibilityTimeout: number): Promise<Array<{ queue: string }>> {
    const eligibleBefore = Date.now() / 1000 - visibilityTimeout
    const candidates = this.outstanding.filter((r) => !r.lost && r.score <= eligibleBefore)
    if (candidates.length === 0) return []
    const scores = await this.unacked.scores(candidates.map((r) => r.tag))
    const lost: Array<{ queue: string }> = []
    candidates.forEach((record, i) => {
      const score = scores[i]
      if (score !== null && score !== undefined && score <= record.score + 1) return
      record.lost = true
      lost.push({ queue: record.consumer.queue })
    })
    return lost
  }

  /** kombu restores at channel close with RPUSH: these go to the head of their queues. */
  async restoreAll(): Promise<void> {
    // In delivery order; one settled meanwhile has left and is not restored.
    for (const record of [...this.outstanding].sort((a, b) => a.seq - b.seq)) {
      if (record.at === -1) continue
      this.detach(record)
      await this.unacked.restore(record.tag, { leftmost: false }).catch(() => undefined)
    }
  }

  forget(): void {
    for (const record of this.outstanding) record.at = -1
    this.outstanding.length = 0
  }
}
