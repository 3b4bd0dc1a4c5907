// This transport's share of the ack emulation: which deliveries it handed out and
// has not seen settled, so the prefetch window and close({requeueUnacked}) are right.
import { onceSettler, type Settler } from './deliveries.js'
import type { ListConsumer } from './list-consumers.js'
import type { UnackedStore } from './unacked.js'

interface Outstanding {
  tag: string
  consumer: ListConsumer
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
  async track(consumer: ListConsumer, tag: string, raw: string, exchange: string, routingKey: string, alreadyRecorded = false): Promise<Settler> {
    const record: Outstanding = { tag, consumer }
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
    return onceSettler(async (what) => {
      this.hooks.assertOpen()
      release()
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
