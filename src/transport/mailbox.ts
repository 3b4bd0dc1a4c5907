// Celery's pidbox (spec §3), built on the Transport contract only, so the same
// code broadcasts over RabbitMQ, Redis and the embedded file broker.
import {
  controlRequestHeaders,
  decodeControlRequest,
  encodeControlReply,
  encodeControlRequest,
  loads,
  matchesDestination,
  uuid4,
  type ControlRequest,
} from '../protocol/index.js'
import { TsqTransportError } from './errors.js'
import type { Consumer, Delivery, ExchangeSpec, QueueSpec, Transport } from './transport.js'

export const DEFAULT_NAMESPACE = 'celery'
/** `control_queue_expires` and `control_queue_ttl` (spec §3.1), in ms. */
const PIDBOX_QUEUE_ARGUMENTS = { 'x-expires': 10_000, 'x-message-ttl': 300_000 } as const

export function pidboxExchange(namespace = DEFAULT_NAMESPACE): ExchangeSpec {
  return { name: `${namespace}.pidbox`, type: 'fanout', durable: false, autoDelete: false }
}

export function replyExchange(namespace = DEFAULT_NAMESPACE): ExchangeSpec {
  return { name: `reply.${namespace}.pidbox`, type: 'direct', durable: false, autoDelete: false }
}

function pidboxQueue(name: string): QueueSpec {
  return { name, durable: false, exclusive: false, autoDelete: true, arguments: { ...PIDBOX_QUEUE_ARGUMENTS } }
}

/** Lamport clock shared by a process's mailbox and events (kombu.clocks.LamportClock). */
export class LamportClock {
  value = 0
  forward(): number {
    this.value += 1
    return this.value
  }
  adjust(other: unknown): number {
    const n = typeof other === 'number' ? other : Number(other)
    if (Number.isFinite(n)) this.value = Math.max(this.value, n)
    return this.forward()
  }
}

export type NodeReply = Record<string, unknown>

export interface BroadcastOptions {
  arguments?: Record<string, unknown>
  destination?: string[] | null
  pattern?: string | null
  matcher?: 'glob' | 'pcre' | null
  /** Seconds to wait for each next reply (a stall window, not a deadline). */
  timeout?: number
  /** Stop after this many replies; defaults to the number of destinations. */
  limit?: number | null
  /** false: fire and forget (a cast). */
  reply?: boolean
  onReply?: (reply: NodeReply) => void
  /**
   * The transport closes right after this broadcast (a one-shot CLI): where
   * the broker drops the reply queue with the connection (RabbitMQ), the
   * consumer is left to that close instead of a cancel of its own.
   */
  lastUse?: boolean
}

export class MailboxClient {
  readonly oid = uuid4()
  private declared = false

  constructor(
    private readonly transport: Transport,
    private readonly namespace = DEFAULT_NAMESPACE,
    readonly clock = new LamportClock(),
  ) {}

  private get replyQueueName(): string {
    return `${this.oid}.reply.${this.namespace}.pidbox`
  }

  private async declareExchanges(): Promise<void> {
    if (this.declared) return
    await this.transport.declareExchange(pidboxExchange(this.namespace))
    await this.transport.declareExchange(replyExchange(this.namespace))
    this.declared = true
  }

  /** Sends one request and collects `{node: reply}` objects as kombu's `_collect` does. */
  async broadcast(method: string, options: BroadcastOptions = {}): Promise<NodeReply[]> {
    const wantReply = options.reply ?? true
    const destination = options.destination && options.destination.length > 0 ? options.destination : null
    const timeoutMs = Math.max(0, (options.timeout ?? 1.0) * 1000)
    const limit = options.limit ?? (destination ? destination.length : null)

    const ticket = uuid4()
    const request: ControlRequest = {
      method,
      arguments: options.arguments ?? {},
      destination,
      pattern: options.pattern ?? null,
      matcher: options.matcher ?? null,
    }
    let consumer: Consumer | undefined
    const replies: NodeReply[] = []
    let wake: (() => void) | undefined
    const onDelivery = (delivery: Delivery) => {
      const reply = this.acceptReply(delivery, ticket)
      if (!reply) return
      replies.push(reply)
      options.onReply?.(reply)
      wake?.()
    }
    let expires = 0
    const publishRequest = () =>
      this.transport.publish(
        pidboxExchange(this.namespace).name,
        '',
        {
          body: Buffer.from(encodeControlRequest(request), 'utf8'),
          properties: {
            contentType: 'application/json',
            contentEncoding: 'utf-8',
            headers: controlRequestHeaders(this.clock.forward(), expires),
            deliveryMode: 2,
            priority: 0,
          },
          // Without replies to wait for, the caller closes the connection next (app.control.revoke):
          // an unconfirmed publish could still be in the client's buffer and be lost with it.
        },
        { confirm: !wantReply },
      )
    if (wantReply) {
      request.ticket = ticket
      request.reply_to = { exchange: replyExchange(this.namespace).name, routing_key: this.oid }
    }
    if (wantReply && this.transport.declareTopology) {
      // Exchanges, reply queue and binding in one round trip. Once the queue is
      // bound a reply waits in it, so the request goes out while the consumer
      // starts (its own channel on AMQP: two more round trips) rather than after.
      await this.transport.declareTopology({
        exchanges: [pidboxExchange(this.namespace), replyExchange(this.namespace)],
        queue: pidboxQueue(this.replyQueueName),
        bindings: [{ exchange: replyExchange(this.namespace).name, routingKey: this.oid }],
      })
      this.declared = true
      expires = Date.now() / 1000 + timeoutMs / 1000
      const [consume, published] = await Promise.allSettled([
        this.transport.consume(this.replyQueueName, onDelivery, { noAck: true }),
        publishRequest(),
      ])
      if (consume.status === 'fulfilled') consumer = consume.value
      if (consume.status === 'rejected' || published.status === 'rejected') {
        await consumer?.cancel().catch(() => undefined)
        throw consume.status === 'rejected' ? consume.reason : (published as PromiseRejectedResult).reason
      }
    } else if (wantReply) {
      await this.declareExchanges()
      await this.transport.declareQueue(pidboxQueue(this.replyQueueName))
      // The bind and the consumer (its own channel on AMQP) go out together: a
      // one-shot CLI waits for one round trip instead of two. Nothing is
      // published until both are done, so no reply can miss the queue.
      const bound = this.transport.bindQueue(this.replyQueueName, replyExchange(this.namespace).name, this.oid)
      const consuming = this.transport.consume(this.replyQueueName, onDelivery, { noAck: true })
      const [bind, consume] = await Promise.allSettled([bound, consuming])
      if (consume.status === 'fulfilled') consumer = consume.value
      if (bind.status === 'rejected' || consume.status === 'rejected') {
        await consumer?.cancel().catch(() => undefined)
        throw bind.status === 'rejected' ? bind.reason : (consume as PromiseRejectedResult).reason
      }
      expires = Date.now() / 1000 + timeoutMs / 1000
      await publishRequest()
    } else {
      await this.declareExchanges()
      await publishRequest()
    }
    if (!consumer) return []
    try {
      let seen = 0
      for (;;) {
        if (limit !== null && replies.length >= limit) break
        if (replies.length === seen) {
          const arrived = await new Promise<boolean>((resolve) => {
            const timer = setTimeout(() => resolve(false), timeoutMs)
            wake = () => {
              clearTimeout(timer)
              resolve(true)
            }
          })
          wake = undefined
          if (!arrived) break
        }
        seen = replies.length
      }
    } finally {
      // RabbitMQ drops the auto-delete reply queue on the cancel, or with the
      // connection; asking again would only cost a one-shot CLI a round trip.
      if (this.transport.capabilities.autoDeleteOnCancel) {
        if (!options.lastUse) await consumer.cancel().catch(() => undefined)
      } else {
        await consumer.cancel().catch(() => undefined)
        await this.transport.deleteQueue(this.replyQueueName).catch(() => undefined)
      }
    }
    return limit !== null ? replies.slice(0, limit) : replies
  }

  private acceptReply(delivery: Delivery, ticket: string): NodeReply | undefined {
    const headers = delivery.properties.headers ?? {}
    this.clock.adjust(headers.clock)
    const expires = typeof headers.expires === 'number' ? headers.expires : 0
    if (expires && expires < Date.now() / 1000) return undefined
    // Replies for another ticket belong to an earlier request on this oid.
    if (headers.ticket !== undefined && headers.ticket !== ticket) return undefined
    try {
      // kombu JSON: Python writes Infinity/NaN bare (e.g. result_backend_max_retries in `conf`).
      const body: unknown = loads(delivery.body.toString('utf8'))
      if (body && typeof body === 'object' && !Array.isArray(body)) return body as NodeReply
    } catch {
      // A malformed reply from a foreign node is dropped, not fatal.
    }
    return undefined
  }
}

export type ControlHandler = (args: Record<string, unknown>, request: ControlRequest) => unknown | Promise<unknown>

/** Thrown by a handler (shutdown) to suppress the reply, as Celery's SystemExit does. */
export class NoReply extends TsqTransportError {
  constructor() {
    super('REPLY_SUPPRESSED', 'no reply')
  }
}

/** The worker side: a queue per node bound to the fanout exchange and a table of named handlers. */
export class MailboxServer {
  private consumer: Consumer | undefined

  constructor(
    private readonly transport: Transport,
    readonly nodename: string,
    private readonly handlers: (method: string) => ControlHandler | undefined,
    private readonly clock = new LamportClock(),
    private readonly namespace = DEFAULT_NAMESPACE,
    private readonly onError: (error: Error) => void = () => undefined,
  ) {}

  get queueName(): string {
    return `${this.nodename}.${this.namespace}.pidbox`
  }

  async start(): Promise<void> {
    await this.transport.declareExchange(pidboxExchange(this.namespace))
    await this.transport.declareExchange(replyExchange(this.namespace))
    await this.transport.declareQueue(pidboxQueue(this.queueName))
    await this.transport.bindQueue(this.queueName, pidboxExchange(this.namespace).name, '')
    this.consumer = await this.transport.consume(this.queueName, (d) => this.handle(d), { noAck: true })
  }

  async stop(): Promise<void> {
    await this.consumer?.cancel().catch(() => undefined)
    this.consumer = undefined
  }

  private async handle(delivery: Delivery): Promise<void> {
    let request: ControlRequest
    try {
      request = decodeControlRequest(delivery.body.toString('utf8'))
    } catch (error) {
      this.onError(error as Error)
      return
    }
    this.clock.adjust(delivery.properties.headers?.clock)
    if (!matchesDestination(request, this.nodename)) return
    let reply: unknown
    try {
      const handler = this.handlers(request.method)
      if (!handler) throw new Error(`KeyError('${request.method}')`)
      reply = await handler(request.arguments ?? {}, request)
    } catch (error) {
      if (error instanceof NoReply) return
      const message = (error as Error).message
      reply = { error: message.startsWith('KeyError(') ? message : `${(error as Error).name}(${JSON.stringify(message)})` }
    }
    if (!request.reply_to) return
    await this.transport
      .publish(
        request.reply_to.exchange,
        request.reply_to.routing_key,
        {
          body: Buffer.from(encodeControlReply(this.nodename, reply), 'utf8'),
          properties: {
            contentType: 'application/json',
            contentEncoding: 'utf-8',
            headers: { ticket: request.ticket ?? null, clock: this.clock.forward() },
            deliveryMode: 1,
            priority: 0,
          },
        },
        { confirm: false },
      )
      .catch((error: Error) => this.onError(error))
  }
}
