// The BRPOP side's consumers and kombu's round-robin queue cycle: which queues the
// next BRPOP names, in which order, and which consumer gets a popped message.
import type { Consumer, DeliveryHandler } from '../../transport.js'
import type { QueueOrderStrategy } from '../options.js'

export interface ConsumerHooks {
  cancel(consumer: ListConsumer): Promise<void>
  changed(): void
}

export class ListConsumer implements Consumer {
  /** Deliveries handed out and not yet acked or rejected (kombu QoS `_delivered`). */
  inFlight = 0
  cancelled = false

  constructor(
    readonly queue: string,
    readonly tag: string,
    readonly handler: DeliveryHandler,
    public prefetch: number,
    readonly noAck: boolean,
    private readonly hooks: ConsumerHooks,
  ) {}

  /** How many more deliveries this consumer takes now (Infinity: no limit). */
  room(): number {
    if (this.cancelled) return 0
    if (this.noAck || !this.prefetch) return Infinity
    return Math.max(0, this.prefetch - this.inFlight)
  }

  /** kombu `QoS.can_consume`: noAck deliveries are never counted. */
  hasRoom(): boolean {
    return this.room() > 0
  }

  cancel(): Promise<void> {
    return this.hooks.cancel(this)
  }

  async setPrefetch(prefetch: number): Promise<void> {
    this.prefetch = Math.max(0, Math.floor(prefetch))
    this.hooks.changed()
  }
}

const NONE: readonly ListConsumer[] = []

export class ConsumerSet {
  private readonly byQueue = new Map<string, ListConsumer[]>()
  /** Queues in the order consumers were added, rotated by round_robin. */
  private order: string[] = []

  /**
   * kombu's cycles (kombu/utils/scheduling.py): `round_robin` moves the queue
   * just served to the end; `priority` keeps the order the queues were
   * consumed in; `sorted` names them in sorted order.
   */
  constructor(private readonly strategy: QueueOrderStrategy = 'round_robin') {}

  add(consumer: ListConsumer): void {
    const list = this.byQueue.get(consumer.queue) ?? []
    list.push(consumer)
    this.byQueue.set(consumer.queue, list)
    if (!this.order.includes(consumer.queue)) this.order.push(consumer.queue)
  }

  remove(consumer: ListConsumer): void {
    const list = (this.byQueue.get(consumer.queue) ?? []).filter((c) => c !== consumer)
    if (list.length) this.byQueue.set(consumer.queue, list)
    else {
      this.byQueue.delete(consumer.queue)
      this.order = this.order.filter((q) => q !== consumer.queue)
    }
  }

  all(): ListConsumer[] {
    return [...this.byQueue.values()].flat()
  }

  get size(): number {
    return this.order.length
  }

  /** Queues with at least one consumer that has room, in cycle order. */
  ready(): string[] {
    // Loops, not filter/some: the claim loop asks after every message it hands over.
    const ready: string[] = []
    for (const q of this.order) {
      for (const c of this.byQueue.get(q) ?? NONE) {
        if (c.hasRoom()) {
          ready.push(q)
          break
        }
      }
    }
    return this.strategy === 'sorted' ? ready.sort() : ready
  }

  /** How many messages one claim may take: the least room among `queues`, so none gets more than it asked for. */
  room(queues: readonly string[]): number {
    let least = Infinity
    for (const q of queues) {
      let room = 0
      for (const c of this.byQueue.get(q) ?? []) room += c.room()
      least = Math.min(least, room)
    }
    return least
  }

  /** The least whole window among `queues` (the sum of their consumers' prefetch; Infinity: no limit). */
  window(queues: readonly string[]): number {
    let least = Infinity
    for (const q of queues) {
      let window = 0
      for (const c of this.byQueue.get(q) ?? []) window += c.cancelled ? 0 : c.noAck || !c.prefetch ? Infinity : c.prefetch
      least = Math.min(least, window)
    }
    return least
  }

  /** Some consumer of `queue` acks: its messages must be recorded in `unacked` as they are taken. */
  hasAcking(queue: string): boolean {
    for (const c of this.byQueue.get(queue) ?? NONE) if (!c.noAck) return true
    return false
  }

  rotate(queue: string): void {
    if (this.strategy !== 'round_robin') return
    const at = this.order.indexOf(queue)
    // Already last (always so with one queue): nothing moves, and no array is made per message.
    if (at === -1 || at === this.order.length - 1) return
    this.order.splice(at, 1)
    this.order.push(queue)
  }

  /** A consumer of `queue` with room, taking turns when several share the queue. */
  pick(queue: string): ListConsumer | undefined {
    const list = this.byQueue.get(queue)
    if (!list) return undefined
    // One consumer (the usual case): no search and no turn to take.
    if (list.length === 1) return list[0]!.hasRoom() ? list[0] : undefined
    const at = list.findIndex((c) => c.hasRoom())
    if (at === -1) return undefined
    const [chosen] = list.splice(at, 1)
    list.push(chosen!)
    return chosen
  }
}
