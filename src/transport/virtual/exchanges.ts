// Exchanges emulated on a broker that has none, as kombu's virtual transport
// does (kombu/transport/virtual/exchange.py and virtual.Channel's routing):
// a binding is a row (routing key, pattern, queue) in the exchange's table,
// and a publish reaches the queues the exchange's type picks from that table.
// The broker gives the primitives: where an exchange's type and table are
// kept, and how a message is put in a queue (Redis: kombu's sets and lists;
// file://: folders and renames).
import { BrokerRequestError } from '../errors.js'
import type { ExchangeType, OutgoingMessage } from '../transport.js'
import type { TopicRule } from './topic.js'

/** One binding as a virtual broker keeps it: kombu's `(routing_key, pattern, queue)`. */
export interface BindingRow {
  routingKey: string
  /** What a topic exchange matches routing keys against; empty for the other types. */
  pattern: string
  queue: string
}

/** What a broker gives the virtual layer: kombu's Channel primitives. */
export interface ExchangeStore {
  /** The exchange's type; undefined when the broker knows no such exchange (a publish to it goes nowhere). */
  typeOf(exchange: string): Promise<ExchangeType | undefined>
  /** Every binding of an exchange (kombu `get_table`). */
  table(exchange: string): Promise<BindingRow[]>
  /** Keeps a binding (kombu `_queue_bind`). */
  storeBinding(exchange: string, type: ExchangeType, row: BindingRow): Promise<void>
  /** Puts the message in each queue (kombu `_put`), as published to `exchange` with `routingKey`. */
  put(queues: readonly string[], exchange: string, routingKey: string, message: OutgoingMessage): Promise<void>
  /**
   * A fanout publish, where the broker broadcasts itself (kombu `_put_fanout`:
   * Redis pub/sub). Without it a fanout exchange puts a copy in every bound queue.
   */
  putFanout?(exchange: string, routingKey: string, message: OutgoingMessage): Promise<void>
}

/** kombu `ExchangeType.prepare_bind`: what a binding keeps; only a topic exchange keeps a pattern. */
export function bindingRow(type: ExchangeType, queue: string, routingKey: string, topic: TopicRule): BindingRow {
  return { routingKey, pattern: type === 'topic' ? topic.pattern(routingKey) : '', queue }
}

/** kombu `ExchangeType.lookup`: the queues of `table` a routing key reaches through an exchange of `type`. */
export function lookupIn(type: ExchangeType, table: readonly BindingRow[], routingKey: string, topic: TopicRule): string[] {
  const queues = new Set<string>()
  for (const row of table) {
    if (type === 'fanout' || (type === 'topic' ? topic.matches(row.pattern, routingKey) : row.routingKey === routingKey))
      queues.add(row.queue)
  }
  // A row without a queue (a member another client wrote half) is no destination.
  queues.delete('')
  return [...queues]
}

export class VirtualExchanges {
  constructor(
    private readonly store: ExchangeStore,
    readonly topic: TopicRule,
  ) {}

  /** kombu `queue_bind`; AMQP's refusals for the default exchange and for an exchange the broker does not know. */
  async bind(queue: string, exchange: string, routingKey: string): Promise<void> {
    if (exchange === '') throw new BrokerRequestError('ACCESS_REFUSED', 'cannot bind to the default exchange')
    const type = await this.store.typeOf(exchange)
    if (type === undefined) throw new BrokerRequestError('NOT_FOUND', `no exchange '${exchange}'`)
    await this.store.storeBinding(exchange, type, bindingRow(type, queue, routingKey, this.topic))
  }

  /** kombu `_lookup`: the queues a publish reaches; the default exchange's is the one its routing key names. */
  async lookup(exchange: string, routingKey: string): Promise<string[]> {
    if (!exchange) return [routingKey]
    const type = await this.store.typeOf(exchange)
    return type === undefined ? [] : lookupIn(type, await this.store.table(exchange), routingKey, this.topic)
  }

  /** kombu `basic_publish` and `ExchangeType.deliver`: a publish no binding takes is dropped, as AMQP drops it. */
  async publish(exchange: string, routingKey: string, message: OutgoingMessage): Promise<void> {
    if (!exchange) return this.store.put([routingKey], exchange, routingKey, message)
    const type = await this.store.typeOf(exchange)
    if (type === undefined) return
    if (type === 'fanout' && this.store.putFanout) return this.store.putFanout(exchange, routingKey, message)
    const queues = lookupIn(type, await this.store.table(exchange), routingKey, this.topic)
    if (queues.length > 0) await this.store.put(queues, exchange, routingKey, message)
  }
}
