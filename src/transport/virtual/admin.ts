// The admin verbs (admin.ts) on brokers without AMQP's own: Redis and file://.
// Queues, publishes and bindings go through the Transport contract; what it
// leaves out (is there such a queue or exchange, every binding of a queue, an
// exchange's removal) is read from the broker's layout by a VirtualLayout:
// kombu's `_kombu.binding.<exchange>` sets and priority lists on Redis, the
// bindings/ and exchanges/ folders on file://. Errors carry RabbitMQ's reply
// codes and words, so a script reads them the same on every broker.
import { resolve } from 'node:path'
import type { BindingRow, BrokerAdmin, DeclareFlags, GotMessage, PublishFlags, QueueDeclared } from '../admin.js'
import { BrokerRequestError, refusal } from '../errors.js'
import { createTransport, defaultFileBrokerDir, type TransportSettings } from '../registry.js'
import type { Delivery, ExchangeType, MessageProperties, Transport } from '../transport.js'
import { parseBrokerUrl } from '../url.js'

/** What the Transport contract does not say about a virtual broker's layout. */
export interface VirtualLayout {
  /** How errors name where a queue lives (RabbitMQ says `in vhost '/'`; kombu's Redis says the db). */
  readonly vhost: string
  bindings(): Promise<BindingRow[]>
  exchangeExists(exchange: string): Promise<boolean>
  deleteExchange(exchange: string): Promise<void>
  /** Removes the queue from every exchange it is bound to (kombu's `_delete`). */
  unbindQueue(queue: string): Promise<void>
  queueExists(queue: string): Promise<boolean>
  close(): Promise<void>
}

export async function openVirtualLayout(url: string, settings: TransportSettings = {}): Promise<VirtualLayout> {
  const parsed = parseBrokerUrl(url)
  if (parsed.scheme === 'redis' || parsed.scheme === 'rediss') {
    const { RedisLayout } = await import('../redis/redis-layout.js')
    return RedisLayout.open(url, settings)
  }
  const { FileLayoutAdmin } = await import('../file/file-layout-admin.js')
  return new FileLayoutAdmin(parsed.path === '' ? defaultFileBrokerDir() : resolve(parsed.path))
}

/** How long basic.get waits for the message a queue said it holds (another consumer may take it first). */
const GET_WAIT_MS = 3_000

const EXCHANGE_TYPES = new Set<string>(['direct', 'fanout', 'topic'])

function pyProperties(props: MessageProperties): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  if (props.contentType) out.content_type = props.contentType
  if (props.contentEncoding) out.content_encoding = props.contentEncoding
  if (Object.keys(props.headers).length) out.application_headers = props.headers
  out.delivery_mode = props.deliveryMode
  out.priority = props.priority
  if (props.correlationId !== undefined) out.correlation_id = props.correlationId
  if (props.replyTo !== undefined) out.reply_to = props.replyTo
  if (props.expiration !== undefined) out.expiration = props.expiration
  return out
}

export class VirtualAdmin implements BrokerAdmin {
  readonly kind: 'redis' | 'file'
  readonly displayUrl: string
  private tagSeq = 0
  private readonly unacked = new Map<number, Delivery>()
  /** Exchanges declared in this session: kombu keeps a declared exchange in the channel's memory. */
  private readonly declared = new Set<string>()

  private constructor(
    private readonly transport: Transport,
    private readonly layout: VirtualLayout,
  ) {
    this.kind = transport.kind === 'redis' ? 'redis' : 'file'
    this.displayUrl = transport.displayUrl
  }

  static async open(url: string, settings: TransportSettings = {}): Promise<VirtualAdmin> {
    const transport = await createTransport(url, settings)
    return new VirtualAdmin(transport, await openVirtualLayout(url, settings))
  }

  async connect(): Promise<void> {
    await this.transport.connect()
  }

  /** A transport refusal in py-amqp's words, naming the AMQP method. */
  private async call<T>(method: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run()
    } catch (err) {
      if (err instanceof BrokerRequestError && !/^\w+\.\w+: \(\d+\)/.test(err.message)) throw refusal(method, err.code, err.message)
      throw err
    }
  }

  private async exists(queue: string): Promise<boolean> {
    return this.layout.queueExists(queue)
  }

  async exchangeDeclare(exchange: string, type: string, flags: DeclareFlags): Promise<void> {
    if (flags.passive) {
      if (!this.declared.has(exchange) && !(await this.layout.exchangeExists(exchange))) {
        throw refusal('Exchange.declare', 'NOT_FOUND', `no exchange '${exchange}' in vhost '${this.layout.vhost}'`)
      }
      return
    }
    if (!EXCHANGE_TYPES.has(type)) throw refusal('Exchange.declare', 'COMMAND_INVALID', `unknown exchange type '${type}'`)
    await this.call('Exchange.declare', () =>
      this.transport.declareExchange({ name: exchange, type: type as ExchangeType, durable: flags.durable, autoDelete: flags.autoDelete }),
    )
    this.declared.add(exchange)
  }

  async exchangeDelete(exchange: string, ifUnused: boolean): Promise<void> {
    if (ifUnused && (await this.layout.bindings()).some((b) => b.exchange === exchange)) {
      throw refusal('Exchange.delete', 'PRECONDITION_FAILED', `exchange '${exchange}' in vhost '${this.layout.vhost}' in use`)
    }
    await this.layout.deleteExchange(exchange)
    this.declared.delete(exchange)
  }

  async queueBind(queue: string, exchange: string, routingKey: string): Promise<void> {
    if (!(await this.exists(queue)) && this.kind === 'file')
      throw refusal('Queue.bind', 'NOT_FOUND', `no queue '${queue}' in vhost '${this.layout.vhost}'`)
    await this.call('Queue.bind', () => this.transport.bindQueue(queue, exchange, routingKey))
  }

  async queueDeclare(queue: string, flags: DeclareFlags): Promise<QueueDeclared> {
    if (flags.passive && !(await this.exists(queue)))
      throw refusal('Queue.declare', 'NOT_FOUND', `no queue '${queue}' in vhost '${this.layout.vhost}'`)
    const { messageCount } = flags.passive
      ? { messageCount: (await this.transport.checkQueue?.(queue))?.messageCount ?? 0 }
      : await this.call('Queue.declare', () =>
          this.transport.declareQueue({ name: queue, durable: flags.durable, autoDelete: flags.autoDelete, exclusive: false }),
        )
    const consumerCount = (await this.transport.checkQueue?.(queue))?.consumerCount ?? 0
    return { queue, messageCount, consumerCount }
  }

  async queueDelete(queue: string, options: { ifUnused: boolean; ifEmpty: boolean }): Promise<number> {
    // RabbitMQ answers delete-ok with 0 for a queue that is not there.
    if (!(await this.exists(queue))) {
      await this.layout.unbindQueue(queue)
      return 0
    }
    const status = (await this.transport.checkQueue?.(queue)) ?? { messageCount: 0, consumerCount: 0 }
    if (options.ifEmpty && status.messageCount > 0)
      throw refusal('Queue.delete', 'PRECONDITION_FAILED', `queue '${queue}' in vhost '${this.layout.vhost}' not empty`)
    if (options.ifUnused && (status.consumerCount ?? 0) > 0)
      throw refusal('Queue.delete', 'PRECONDITION_FAILED', `queue '${queue}' in vhost '${this.layout.vhost}' in use`)
    await this.layout.unbindQueue(queue)
    await this.call('Queue.delete', () => this.transport.deleteQueue(queue))
    return status.messageCount
  }

  async queuePurge(queue: string): Promise<number> {
    // kombu's Redis has no empty queue to miss (an empty list is no key); the file broker's folder is the queue.
    if (this.kind === 'file' && !(await this.exists(queue)))
      throw refusal('Queue.purge', 'NOT_FOUND', `no queue '${queue}' in vhost '${this.layout.vhost}'`)
    return this.call('Queue.purge', () => this.transport.purge(queue))
  }

  async basicGet(queue: string, noAck: boolean): Promise<GotMessage | null> {
    if (this.kind === 'file' && !(await this.exists(queue)))
      throw refusal('Basic.get', 'NOT_FOUND', `no queue '${queue}' in vhost '${this.layout.vhost}'`)
    const before = (await this.transport.checkQueue?.(queue))?.messageCount ?? 0
    if (before === 0) return null
    // The contract has no basic.get: a consumer with a window of one takes the next message, then stops.
    const delivery = await this.call('Basic.get', () => this.takeOne(queue))
    if (!delivery) return null
    this.tagSeq += 1
    if (noAck) await delivery.ack()
    else this.unacked.set(this.tagSeq, delivery)
    return {
      body: delivery.body,
      properties: pyProperties(delivery.properties),
      deliveryTag: this.tagSeq,
      exchange: delivery.exchange,
      routingKey: delivery.routingKey,
      redelivered: delivery.redelivered,
      messageCount: (await this.transport.checkQueue?.(queue))?.messageCount ?? Math.max(0, before - 1),
    }
  }

  private async takeOne(queue: string): Promise<Delivery | null> {
    let taken: Delivery | null = null
    let arrived: () => void = () => undefined
    const first = new Promise<void>((resolve) => (arrived = resolve))
    const consumer = await this.transport.consume(
      queue,
      async (delivery) => {
        // A second delivery before the cancel goes straight back.
        if (taken) return delivery.reject({ requeue: true })
        taken = delivery
        arrived()
      },
      { prefetch: 1 },
    )
    let timer: NodeJS.Timeout | undefined
    await Promise.race([first, new Promise<void>((resolve) => (timer = setTimeout(resolve, GET_WAIT_MS)))])
    clearTimeout(timer)
    await consumer.cancel()
    return taken
  }

  async basicPublish(body: string, exchange: string, routingKey: string, options: PublishFlags): Promise<void> {
    if (options.immediate) throw refusal('Basic.publish', 'NOT_IMPLEMENTED', 'immediate=true')
    // mandatory: kombu's virtual channel ignores it too (a message no binding takes is dropped).
    const message = {
      body: Buffer.from(body, 'utf8'),
      properties: { contentType: '', contentEncoding: 'utf-8', headers: {}, deliveryMode: 2 as const, priority: 0 },
    }
    await this.call('Basic.publish', () => this.transport.publish(exchange, routingKey, message))
  }

  async basicAck(deliveryTag: number): Promise<void> {
    const delivery = this.unacked.get(deliveryTag)
    if (!delivery) throw refusal('Basic.ack', 'PRECONDITION_FAILED', `unknown delivery tag ${deliveryTag}`)
    this.unacked.delete(deliveryTag)
    await delivery.ack()
  }

  async close(): Promise<void> {
    try {
      // Unacked messages go back to their queues, as a closed AMQP channel's do.
      await this.transport.close({ requeueUnacked: true })
    } finally {
      await this.layout.close()
    }
  }
}
