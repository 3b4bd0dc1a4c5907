// This transport's share of the ack emulation: which deliveries it handed out and
// has not seen settled, so the prefetch window and close({requeueUnacked}) are right.
import { onceSettler, type Settler } from './deliveries.js'
import type { ListConsumer } from './list-consumers.js'
import type { UnackedStore } from './unacked.js'

interface Outstanding {
  tag: string
  consumer: ListConsumer
  /** The `unacked_index` score this delivery was given (its delivery time, or the time it was deferred to). */
  score: number
  /** Restored by a visibility-timeout pass (any process's): the broker delivers it again. */
  lost: boolean
  /** Where it sits in `outstanding`; -1 when not there. */
  at: number
  /** Its place in delivery order (removals reorder `outstanding`). */
  seq: number
}

/** A tracked delivery: how to settle it, and whether the copy held here is still the live one. */
export interface Tracked {
  settler: Settler
  isLive(): boolean
  /** The delivery's visibility now runs from `untilUnixSeconds` (Delivery.deferVisibility). */
  deferred(untilUnixSeconds: number): void
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
  track(consumer: ListConsumer, tag: string, raw: string, exchange: string, routingKey: string, alreadyRecorded = false): Tracked | Promise<Tracked> {
    // At or after the score the claim wrote, which is all findLost needs to know.
    const record: Outstanding = { tag, consumer, score: Date.now() / 1000, lost: false, at: -1, seq: this.delivered++ }
    this.hold(record)
    const tracked = this.trackedFor(record)
    if (alreadyRecorded) return tracked
    return this.unacked.add(tag, raw, exchange, routingKey).then(
      () => tracked,
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

  private trackedFor(record: Outstanding): Tracked {
    const { tag } = record
    const settler = onceSettler((what) => {
      this.hooks.assertOpen()
      this.release(record)
      // Its tag now names the restored copy, which another delivery holds: not ours to settle.
      if (record.lost) {
        this.hooks.settled()
        return Promise.resolve()
      }
      // kombu: reject(requeue) restores leftmost (LPUSH, back of the queue); reject(no requeue) is an ack.
      const settling = what === true ? this.unacked.restore(tag, { leftmost: true }).then(() => undefined) : this.unacked.remove(tag)
      return settling.then(
        () => this.hooks.settled(),
        (error: unknown) => {
          this.hold(record)
          throw this.hooks.classify(error, what === 'ack' ? `ack ${tag}` : `reject ${tag}`)
        },
      )
    })
    return {
      settler,
      isLive: () => !record.lost,
      deferred: (until) => {
        record.score = until
      },
    }
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
