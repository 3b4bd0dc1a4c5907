// RabbitMQ's own answers to the admin verbs (admin.ts), on one connection and
// one confirm channel. A refused request closes the channel, as AMQP does; the
// next verb opens a new one (Celery's amqp shell reconnects the same way), so
// delivery tags start again from 1 after an error.
import type { ConfirmChannel, ChannelModel, GetMessage, Message, MessageProperties } from 'amqplib'
import type { BrokerAdmin, DeclareFlags, GotMessage, PublishFlags, QueueDeclared } from '../admin.js'
import { BrokerRequestError, refusal, TransportClosedError } from '../errors.js'
import type { TransportSettings } from '../registry.js'
import { classifyAmqpError } from './classify-error.js'
import { amqpConnectSettings, type AmqpConnectSettings } from './connection/connect-options.js'
import { openAmqpConnection } from './connection/open-connection.js'

/** amqplib's property names and py-amqp's, in the order py-amqp declares them. */
const PY_AMQP_PROPERTY_NAMES: Array<[keyof MessageProperties, string]> = [
  ['contentType', 'content_type'],
  ['contentEncoding', 'content_encoding'],
  ['headers', 'application_headers'],
  ['deliveryMode', 'delivery_mode'],
  ['priority', 'priority'],
  ['correlationId', 'correlation_id'],
  ['replyTo', 'reply_to'],
  ['expiration', 'expiration'],
  ['messageId', 'message_id'],
  ['timestamp', 'timestamp'],
  ['type', 'type'],
  ['userId', 'user_id'],
  ['appId', 'app_id'],
  ['clusterId', 'cluster_id'],
]

/** The reply code and text RabbitMQ closed the channel with, from amqplib's message. */
function serverReply(err: unknown): { code: number; text: string } | null {
  if (!(err instanceof Error)) return null
  const code = (err as { code?: unknown }).code
  const quoted = /with message "(.*)"$/s.exec(err.message)
  if (typeof code !== 'number' || !quoted) return null
  return { code, text: quoted[1]!.replace(/\s+/g, ' ').trim() }
}

export function pyAmqpProperties(props: MessageProperties): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [ours, theirs] of PY_AMQP_PROPERTY_NAMES) {
    const value = props[ours]
    // amqplib gives {} for a message without headers, where py-amqp has none.
    if (ours === 'headers' && typeof value === 'object' && value !== null && Object.keys(value).length === 0) continue
    if (value !== undefined && value !== null) out[theirs] = value
  }
  return out
}

export class AmqpAdmin implements BrokerAdmin {
  readonly kind = 'amqp' as const
  readonly displayUrl: string
  private readonly settings: AmqpConnectSettings
  private conn: ChannelModel | null = null
  private channel: Promise<ConfirmChannel> | null = null
  private closed = false
  /** Set by the broker's basic.return for a mandatory publish no queue took. */
  private returned = false

  constructor(url: string, settings: TransportSettings = {}) {
    this.settings = amqpConnectSettings(url, { ssl: settings.ssl, loginMethod: settings.loginMethod })
    this.displayUrl = this.settings.displayUrl
  }

  async connect(): Promise<void> {
    if (this.conn) return
    const conn = await openAmqpConnection(this.settings, `tsq-amqp-${process.pid}`)
    // A connection-level close (a 5xx) surfaces on the next verb's promise; this keeps it from being unhandled.
    conn.on('error', () => undefined)
    conn.on('close', () => {
      if (this.conn === conn) {
        this.conn = null
        this.channel = null
      }
    })
    this.conn = conn
  }

  private async open(): Promise<ConfirmChannel> {
    if (this.closed) throw new TransportClosedError(`amqp admin ${this.displayUrl} is closed`)
    await this.connect()
    const conn = this.conn!
    this.channel ??= conn.createConfirmChannel().then((ch) => {
      ch.on('error', () => undefined)
      ch.on('return', () => {
        this.returned = true
      })
      ch.on('close', () => {
        if (this.channel && this.conn === conn) this.channel = null
      })
      return ch
    })
    return this.channel
  }

  /** Runs one AMQP method; a refusal becomes py-amqp's line, `Method.name: (code) TEXT`. */
  private async call<T>(method: string, run: (ch: ConfirmChannel) => Promise<T>): Promise<T> {
    const ch = await this.open()
    try {
      return await run(ch)
    } catch (err) {
      const reply = serverReply(err)
      if (reply) {
        this.channel = null
        const classified = classifyAmqpError(err, method)
        const code = classified instanceof BrokerRequestError ? classified.code : reply.text.split(' ')[0]!
        throw new BrokerRequestError(code, `${method}: (${reply.code}) ${reply.text}`, { cause: err })
      }
      throw classifyAmqpError(err, method)
    }
  }

  async exchangeDeclare(exchange: string, type: string, flags: DeclareFlags): Promise<void> {
    await this.call('Exchange.declare', async (ch) => {
      if (flags.passive) await ch.checkExchange(exchange)
      else await ch.assertExchange(exchange, type, { durable: flags.durable, autoDelete: flags.autoDelete })
    })
  }

  async exchangeDelete(exchange: string, ifUnused: boolean): Promise<void> {
    await this.call('Exchange.delete', (ch) => ch.deleteExchange(exchange, { ifUnused }))
  }

  async queueBind(queue: string, exchange: string, routingKey: string): Promise<void> {
    await this.call('Queue.bind', (ch) => ch.bindQueue(queue, exchange, routingKey))
  }

  async queueDeclare(queue: string, flags: DeclareFlags): Promise<QueueDeclared> {
    return this.call('Queue.declare', async (ch) => {
      const ok = flags.passive
        ? await ch.checkQueue(queue)
        : await ch.assertQueue(queue, { durable: flags.durable, autoDelete: flags.autoDelete, exclusive: false })
      return { queue: ok.queue, messageCount: ok.messageCount, consumerCount: ok.consumerCount }
    })
  }

  async queueDelete(queue: string, options: { ifUnused: boolean; ifEmpty: boolean }): Promise<number> {
    return this.call('Queue.delete', async (ch) => (await ch.deleteQueue(queue, options)).messageCount)
  }

  async queuePurge(queue: string): Promise<number> {
    return this.call('Queue.purge', async (ch) => (await ch.purgeQueue(queue)).messageCount)
  }

  async basicGet(queue: string, noAck: boolean): Promise<GotMessage | null> {
    return this.call('Basic.get', async (ch) => {
      const got = (await ch.get(queue, { noAck })) as GetMessage | false
      if (!got) return null
      return {
        body: got.content,
        properties: pyAmqpProperties(got.properties),
        deliveryTag: got.fields.deliveryTag,
        exchange: got.fields.exchange,
        routingKey: got.fields.routingKey,
        redelivered: got.fields.redelivered,
        messageCount: got.fields.messageCount,
      }
    })
  }

  async basicPublish(body: string, exchange: string, routingKey: string, options: PublishFlags): Promise<void> {
    // RabbitMQ 3 closes the whole connection on immediate=true; amqplib cannot send it, so say what the broker would.
    if (options.immediate) throw refusal('Basic.publish', 'NOT_IMPLEMENTED', 'immediate=true')
    await this.call('Basic.publish', async (ch) => {
      this.returned = false
      await new Promise<void>((resolve, reject) => {
        ch.publish(exchange, routingKey, Buffer.from(body, 'utf8'), { mandatory: options.mandatory, contentEncoding: 'utf-8' }, (err) =>
          err ? reject(err) : resolve(),
        )
      })
    })
    // The broker sends basic.return before the confirm of the same message.
    if (this.returned) throw new BrokerRequestError('NO_ROUTE', 'Basic.publish: (312) NO_ROUTE')
  }

  async basicAck(deliveryTag: number): Promise<void> {
    await this.call('Basic.ack', async (ch) => {
      ch.ack({ fields: { deliveryTag } } as Message)
      // basic.ack has no reply; a round trip after it surfaces the broker's refusal (an unknown tag) here, not on a later verb.
      await ch.checkExchange('amq.direct')
    })
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    const conn = this.conn
    this.conn = null
    this.channel = null
    // Closing the connection hands unacked messages back, as AMQP does.
    await conn?.close().catch(() => undefined)
  }
}
