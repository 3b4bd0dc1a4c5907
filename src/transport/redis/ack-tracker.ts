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
  // A Set of records, not a map by tag: a message restored by visibility timeout
  // and popped again carries the same tag twice.
  private readonly outstanding = new Set<Outstanding>()

  constructor(
    private readonly unacked: UnackedStore,
    private readonly hooks: AckTrackerHooks,
  ) {}

  /** Records the delivery in `unacked` (kombu QoS.append) and returns how to settle it. */
  async track(consumer: ListConsumer, tag: string, raw: string, exchange: string, routingKey: string, alreadyRecorded = false): Promise<Tracked> {
    // At or after the score the claim wrote, which is all findLost needs to know.
    const record: Outstanding = { tag, consumer, score: Date.now() / 1000, lost: false }
    const hold = (): void => {
      consumer.inFlight += 1
      this.outstanding.add(record)
    }
    const release = (): void => {
      consumer.inFlight -= 1
      this.outstanding.delete(record)
    }
    hold()
    try {
      if (!alreadyRecorded) await this.unacked.add(tag, raw, exchange, routingKey)
    } catch (error) {
      release()
      throw this.hooks.classify(error, `record unacked ${tag}`)
    }
    const settler = onceSettler(async (what) => {
      this.hooks.assertOpen()
      release()
      // Its tag now names the restored copy, which another delivery holds: not ours to settle.
      if (record.lost) return this.hooks.settled()
      try {
        // kombu: reject(requeue) restores leftmost (LPUSH, back of the queue); reject(no requeue) is an ack.
        if (what === true) await this.unacked.restore(tag, { leftmost: true })
        else await this.unacked.remove(tag)
      } catch (error) {
        hold()
        throw this.hooks.classify(error, what === 'ack' ? `ack ${tag}` : `reject ${tag}`)
      }
      this.hooks.settled()
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
    const candidates = [...this.outstanding].filter((r) => !r.lost && r.score <= eligibleBefore)
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
    for (const record of this.outstanding) await this.unacked.restore(record.tag, { leftmost: false }).catch(() => undefined)
    this.outstanding.clear()
  }

  forget(): void {
    this.outstanding.clear()
  }
}
