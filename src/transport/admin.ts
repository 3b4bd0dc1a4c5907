// The broker-admin verbs behind `tsq amqp` and `tsq list bindings`: AMQP
// methods the Transport contract leaves out (basic.get, passive declares,
// exchange.delete, queue.delete's if-unused/if-empty) and the bindings a broker
// holds. RabbitMQ answers them itself (amqp/amqp-admin.ts); on Redis and file://
// they act on the transport's own layout (virtual/admin.ts), as kombu's virtual
// channel does.
import { parseBrokerUrl } from './url.js'
import type { TransportSettings } from './registry.js'

/** What `basic.get` took, with py-amqp's names for the properties it carried. */
export interface GotMessage {
  body: Buffer
  /** py-amqp's property names (content_type, application_headers, ...), only those present. */
  properties: Record<string, unknown>
  deliveryTag: number
  exchange: string
  routingKey: string
  redelivered: boolean
  /** Messages left in the queue after this one. */
  messageCount: number
}

export interface QueueDeclared {
  queue: string
  messageCount: number
  consumerCount: number
}

export interface BindingRow {
  queue: string
  exchange: string
  routingKey: string
}

export interface DeclareFlags {
  passive: boolean
  durable: boolean
  autoDelete: boolean
}

/** basic.publish's flags; RabbitMQ 3 refuses immediate=true (NOT_IMPLEMENTED), and so does every admin here. */
export interface PublishFlags {
  mandatory: boolean
  immediate: boolean
}

/**
 * One connection, kept for a session: a delivery taken by `basicGet` stays
 * unacked until `basicAck` (or until close, which hands it back). Errors are
 * BrokerRequestError with the AMQP reply code's name; AMQP's messages read as
 * py-amqp's (`Queue.declare: (404) NOT_FOUND - no queue 'x' ...`).
 */
export interface BrokerAdmin {
  readonly kind: 'amqp' | 'redis' | 'file'
  readonly displayUrl: string
  connect(): Promise<void>
  exchangeDeclare(exchange: string, type: string, flags: DeclareFlags): Promise<void>
  exchangeDelete(exchange: string, ifUnused: boolean): Promise<void>
  queueBind(queue: string, exchange: string, routingKey: string): Promise<void>
  queueDeclare(queue: string, flags: DeclareFlags): Promise<QueueDeclared>
  /** Returns how many messages went with the queue. */
  queueDelete(queue: string, options: { ifUnused: boolean; ifEmpty: boolean }): Promise<number>
  queuePurge(queue: string): Promise<number>
  /** null when the queue is empty. */
  basicGet(queue: string, noAck: boolean): Promise<GotMessage | null>
  /** `body` is sent as py-amqp sends a str: UTF-8, content_encoding utf-8. */
  basicPublish(body: string, exchange: string, routingKey: string, options: PublishFlags): Promise<void>
  basicAck(deliveryTag: number): Promise<void>
  close(): Promise<void>
}

/** Opens (lazily, as createTransport does) the admin for a broker URL. */
export async function createBrokerAdmin(url: string, settings: TransportSettings = {}): Promise<BrokerAdmin> {
  const scheme = parseBrokerUrl(url).scheme
  if (scheme === 'amqp' || scheme === 'amqps' || scheme === 'pyamqp') {
    const { AmqpAdmin } = await import('./amqp/amqp-admin.js')
    return new AmqpAdmin(url, settings)
  }
  const { VirtualAdmin } = await import('./virtual/admin.js')
  return VirtualAdmin.open(url, settings)
}

/** The bindings Redis and file:// hold (RabbitMQ's come from its management API, above this layer). */
export async function listVirtualBindings(url: string, settings: TransportSettings = {}): Promise<BindingRow[]> {
  const { openVirtualLayout } = await import('./virtual/admin.js')
  const layout = await openVirtualLayout(url, settings)
  try {
    return await layout.bindings()
  } finally {
    await layout.close()
  }
}
