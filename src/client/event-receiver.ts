// Celery's event receiver (`app.events.Receiver`, celery/events/receiver.py):
// a queue `celeryev.<uuid>` bound to the celeryev exchange, consumed without
// acks. Monitors (`tsq events`) and the worker's gossip listen through it.
import { randomUUID } from 'node:crypto'
import { decodeEvents, utcoffsetHours } from '../protocol/index.js'
import type { Consumer, Delivery, Transport } from '../transport/index.js'

export const EVENT_EXCHANGE = 'celeryev'

/** Celery's celeryev: a durable topic exchange on AMQP; kombu turns it into fanout on Redis. */
export function declareEventExchange(transport: Transport): Promise<void> {
  return transport.declareExchange({
    name: EVENT_EXCHANGE,
    type: transport.kind === 'amqp' ? 'topic' : 'fanout',
    durable: true,
    autoDelete: false,
  })
}

export interface EventReceiverOptions {
  /** Which events, as a binding key: `#` all, `worker.#` the workers' own, `task.#` tasks'. */
  routingKey?: string
  /** Each event on its own; a `task.multi` batch arrives as its events in order. */
  onEvent(event: Record<string, unknown>): void
  /** A body that is not an event; the receiver goes on. */
  onUnreadable?(error: Error): void
  /** 'pyfloat' keeps `2.0` a float, for output that shows values as Python would. */
  floats?: 'number' | 'pyfloat'
}

export class EventReceiver {
  /** The queue Celery names `celeryev.<uuid4>`. */
  readonly queue = `${EVENT_EXCHANGE}.${randomUUID()}`
  private consumer: Consumer | undefined

  constructor(
    private readonly transport: Transport,
    private readonly options: EventReceiverOptions,
  ) {}

  async start(): Promise<void> {
    await declareEventExchange(this.transport)
    // event_queue_ttl 5 s and event_queue_expires 60 s, Celery's defaults: a
    // receiver that goes away leaves nothing that fills up.
    await this.transport.declareQueue({
      name: this.queue,
      durable: false,
      exclusive: false,
      autoDelete: true,
      arguments: { 'x-message-ttl': 5_000, 'x-expires': 60_000 },
    })
    await this.transport.bindQueue(this.queue, EVENT_EXCHANGE, this.options.routingKey ?? '#')
    this.consumer = await this.transport.consume(this.queue, (delivery) => this.onDelivery(delivery), { noAck: true })
  }

  async stop(): Promise<void> {
    await this.consumer?.cancel().catch(() => undefined)
    this.consumer = undefined
    // RabbitMQ drops the auto-delete queue itself; on Redis its binding would
    // stay, one per start (kombu deletes it when the channel closes).
    if (!this.transport.capabilities.autoDeleteOnCancel) await this.transport.deleteQueue(this.queue).catch(() => undefined)
  }

  private onDelivery(delivery: Delivery): void {
    let events: Record<string, unknown>[]
    try {
      events = decodeEvents(delivery.body.toString('utf8'), { floats: this.options.floats })
    } catch (error) {
      this.options.onUnreadable?.(error as Error)
      return
    }
    // One clock reading and one zone lookup per message, not per event: a
    // task.multi batch carries hundreds, all received at once.
    const here = utcoffsetHours()
    const now = Date.now() / 1000
    for (const event of events) this.options.onEvent(localize(event, here, now))
  }
}

/**
 * Celery's `Receiver.event_from_message`: the timestamp moved from the
 * sender's UTC offset to this machine's, and the time it arrived here added
 * as `local_received`, which monitors such as Flower read.
 */
function localize(event: Record<string, unknown>, here: number, now: number): Record<string, unknown> {
  const offset = event.utcoffset
  const timestamp = event.timestamp
  if (typeof offset === 'number' && typeof timestamp === 'number') {
    const shift = (offset - here) * 3600
    if (shift !== 0) event.timestamp = timestamp - shift
  }
  event.local_received = now
  return event
}
