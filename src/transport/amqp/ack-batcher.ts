// Acks of one channel, coalesced: every ack made in one turn of the event loop
// goes out together, as one `basic.ack multiple=true` for the run of settled
// deliveries at the front, plus single acks for any settled behind one still
// running. A busy worker settles many deliveries per turn, and each frame
// saved is work saved on both sides of the socket (RabbitMQ's ack handling is
// per frame). Nothing waits longer than the turn: a long task at the front
// does not hold back the acks of the short ones behind it.
import type { Channel, Message } from 'amqplib'

export class AckBatcher {
  /** Delivery tags not yet settled, in delivery order (tags rise on a channel). */
  private readonly unsettled: number[] = []
  private readonly acked = new Set<number>()
  private flushScheduled = false
  private closed = false

  constructor(private readonly channel: Channel) {}

  delivered(tag: number): void {
    this.unsettled.push(tag)
  }

  ack(tag: number): void {
    if (this.closed) return
    this.acked.add(tag)
    if (!this.flushScheduled) {
      this.flushScheduled = true
      setImmediate(() => this.flush())
    }
  }

  /** Rejects go out at once: a multiple ack sent later must not cover them, and does not (they are settled). */
  reject(message: Message, requeue: boolean): void {
    if (this.closed) return
    this.forget(message.fields.deliveryTag)
    this.channel.reject(message, requeue)
  }

  /** Sends what is pending; called before the channel closes, so no ack is left behind. */
  flush(): void {
    this.flushScheduled = false
    if (this.closed || this.acked.size === 0) return
    let front = 0
    while (front < this.unsettled.length && this.acked.has(this.unsettled[front]!)) {
      this.acked.delete(this.unsettled[front]!)
      front += 1
    }
    try {
      if (front > 0) {
        const upTo = this.unsettled[front - 1]!
        this.unsettled.splice(0, front)
        this.channel.ack(tagOnly(upTo), true)
      }
      for (const tag of this.acked) {
        this.forget(tag)
        this.channel.ack(tagOnly(tag), false)
      }
    } catch {
      // The channel closed under us: the broker redelivers what it did not get.
      this.closed = true
    }
    this.acked.clear()
  }

  /** The channel is gone: pending acks can no longer be sent (the broker redelivers). */
  close(): void {
    this.closed = true
    this.acked.clear()
    this.unsettled.length = 0
  }

  private forget(tag: number): void {
    const index = this.unsettled.indexOf(tag)
    if (index !== -1) this.unsettled.splice(index, 1)
  }
}

/** amqplib's ack reads only `fields.deliveryTag`. */
function tagOnly(deliveryTag: number): Message {
  return { fields: { deliveryTag } } as Message
}
