// One consumer, one channel: QoS then applies to this consumer alone, and a
// channel error (a bad ack, a deleted queue) cannot take other consumers down.
import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib'
import type { ConsumeOptions, Consumer, Delivery, DeliveryHandler } from '../transport.js'
import { AckBatcher } from './ack-batcher.js'
import { classifyAmqpError } from './classify-error.js'
import { fromAmqplibProperties, toQueueArguments } from './properties.js'

/**
 * What ack and reject return: the frame is queued on the channel at once, so
 * there is nothing to wait for, and one shared settled promise is not a new
 * one per message.
 */
const SETTLED: Promise<void> = Promise.resolve()

export interface ConsumerHost {
  /** Reports a failure that has no caller to throw to. */
  report(err: unknown, what: string): void
  /** The consumer stopped for good (cancelled, or its queue was deleted). */
  forget(consumer: AmqpConsumer): void
  /** The queue was declared through this transport, so it can be declared again. */
  redeclareQueue(channel: Channel, queue: string): Promise<boolean>
  /** True while the connection is open (not closing, not reconnecting). */
  connectionUsable(conn: ChannelModel): boolean
  /** The channel holding this consumer's unsettled deliveries is gone; `reason` is the broker's, if any. */
  deliveriesLost(consumer: AmqpConsumer, reason: Error | null): void
}

let consumerSeq = 0

export class AmqpConsumer implements Consumer {
  readonly queue: string
  readonly tag: string
  private prefetch: number
  private readonly noAck: boolean
  private readonly perConsumerPrefetch: boolean
  private readonly consumeArguments: Record<string, unknown> | undefined
  private channel: Channel | null = null
  private batcher: AckBatcher | null = null
  private conn: ChannelModel | null = null
  private generation = 0
  private cancelled = false
  /** Unsettled deliveries on the current channel; a cancelled consumer closes its channel at zero. */
  private outstanding = 0

  constructor(
    queue: string,
    private readonly handler: DeliveryHandler,
    options: ConsumeOptions,
    private readonly host: ConsumerHost,
  ) {
    consumerSeq += 1
    this.queue = queue
    // Not the queue name: consumer tags are AMQP short strings (255 bytes), as queue names can be.
    this.tag = `tsq-${process.pid}-${consumerSeq}`
    this.prefetch = options.prefetch ?? 0
    this.noAck = options.noAck ?? false
    this.perConsumerPrefetch = options.perConsumerPrefetch ?? false
    this.consumeArguments = toQueueArguments(options.arguments)
  }

  /**
   * Opens a channel on `conn` and starts consuming. Called at consume() time and
   * again after every reconnect. Throws (classified) if the broker refuses.
   */
  async start(conn: ChannelModel): Promise<void> {
    if (this.cancelled) return
    this.generation += 1
    this.outstanding = 0
    const generation = this.generation
    // A second start (consume() retried across a reconnect) must not leave an
    // orphan channel holding deliveries nobody will ack.
    this.batcher?.close()
    this.batcher = null
    this.channel?.close().catch(() => undefined)
    this.channel = null
    this.conn = conn
    const channel = await conn.createChannel()
    const batcher = new AckBatcher(channel)
    // The broker's reason comes as 'error' just before 'close' (an ack timeout, a deleted queue).
    let closeReason: Error | null = null
    channel.on('error', (err: Error) => (closeReason = err))
    // Only a channel that was consuming is restarted when it fails; a failed
    // start is the caller's error to handle.
    let established = false
    channel.on('close', () => {
      if (established) this.onChannelClosed(conn, channel, generation, closeReason)
    })
    this.channel = channel
    this.batcher = batcher
    try {
      // global=true: with one consumer per channel it is exactly per-consumer,
      // and unlike global=false RabbitMQ applies a change to a live consumer.
      // A quorum queue refuses global QoS, so there it is per-consumer (global=false).
      if (this.prefetch > 0) await channel.prefetch(this.prefetch, !this.perConsumerPrefetch)
      await channel.consume(this.queue, (msg) => this.onMessage(channel, generation, msg), {
        noAck: this.noAck,
        consumerTag: this.tag,
        ...(this.consumeArguments ? { arguments: this.consumeArguments } : {}),
      })
      established = true
    } catch (err) {
      this.channel = null
      this.batcher = null
      batcher.close()
      await channel.close().catch(() => undefined)
      throw classifyAmqpError(err, `consume from queue '${this.queue}'`)
    }
  }

  /** Transport close: closing the channel waits until the broker has its earlier frames (acks); the connection closes next. */
  async closeChannel(): Promise<void> {
    this.cancelled = true
    const channel = this.channel
    this.channel = null
    this.batcher?.flush()
    this.batcher?.close()
    this.batcher = null
    // A no-ack consumer has no acks to flush: the connection's close, which
    // follows, takes its channel along without a round trip of its own.
    if (channel && !this.noAck) await channel.close().catch(() => undefined)
  }

  /** The connection died: deliveries in flight will be redelivered by the broker. */
  detach(): void {
    const held = this.channel !== null && !this.noAck
    this.channel = null
    this.batcher?.close()
    this.batcher = null
    if (held) this.host.deliveriesLost(this, null)
  }

  async cancel(): Promise<void> {
    if (this.cancelled) return
    this.cancelled = true
    this.host.forget(this)
    const channel = this.channel
    if (!channel) return
    try {
      await channel.cancel(this.tag)
    } catch {
      // The channel or connection is already gone; nothing left to stop.
    }
    this.closeIfDrained()
  }

  /**
   * Unacked deliveries stay on the channel (closing it would requeue them), so a
   * cancelled consumer's channel closes only once the last one is settled.
   */
  private closeIfDrained(): void {
    const channel = this.channel
    if (!this.cancelled || !channel || this.outstanding > 0) return
    this.channel = null
    this.batcher?.flush()
    this.batcher?.close()
    this.batcher = null
    channel.close().catch(() => undefined)
  }

  async setPrefetch(prefetch: number): Promise<void> {
    this.prefetch = prefetch
    const channel = this.channel
    // Per-consumer QoS binds only consumers started after it: the window of a
    // live one is static (Celery: "Prefetch count is now static"); a restart
    // (reconnect) takes the new value.
    if (!channel || this.perConsumerPrefetch) return
    try {
      await channel.prefetch(prefetch, true)
    } catch (err) {
      throw classifyAmqpError(err, `set prefetch on '${this.queue}'`)
    }
  }

  private onChannelClosed(conn: ChannelModel, channel: Channel, generation: number, reason: Error | null): void {
    if (this.channel === channel) {
      this.channel = null
      this.batcher?.close()
      this.batcher = null
      if (!this.noAck) this.host.deliveriesLost(this, reason)
    }
    // A closing connection takes every channel with it; the transport restarts
    // consumers after the reconnect. Here only a lone channel failure is handled.
    if (this.cancelled || generation !== this.generation || !this.host.connectionUsable(conn)) return
    void this.restartAfterChannelFailure(conn)
  }

  private async restartAfterChannelFailure(conn: ChannelModel): Promise<void> {
    try {
      await this.start(conn)
    } catch (err) {
      if (!this.host.connectionUsable(conn)) return
      this.host.report(err, `restart consumer on '${this.queue}'`)
      this.cancelled = true
      this.host.forget(this)
    }
  }

  private onMessage(channel: Channel, generation: number, msg: ConsumeMessage | null): void {
    if (msg === null) {
      void this.onServerCancel(channel, generation)
      return
    }
    let settled = this.noAck
    const batcher = this.batcher
    if (!settled) {
      this.outstanding += 1
      batcher?.delivered(msg.fields.deliveryTag)
    }
    const settle = (how: (batcher: AckBatcher) => void): Promise<void> => {
      if (settled) return SETTLED
      settled = true
      if (generation === this.generation) this.outstanding -= 1
      // A delivery from a channel that has since closed is redelivered by the
      // broker; acking it on another channel would be a 406, so it is dropped.
      if (this.channel !== channel || generation !== this.generation || !batcher || batcher !== this.batcher) return SETTLED
      try {
        how(batcher)
      } catch {
        // Channel closed between the check and the send: same as above.
      }
      this.closeIfDrained()
      return SETTLED
    }
    const delivery: Delivery = {
      body: msg.content,
      properties: fromAmqplibProperties(msg.properties),
      exchange: msg.fields.exchange,
      routingKey: msg.fields.routingKey,
      queue: this.queue,
      redelivered: msg.fields.redelivered,
      deliveryTag: `${this.tag}.${generation}.${msg.fields.deliveryTag}`,
      ack: () => settle((b) => b.ack(msg.fields.deliveryTag)),
      reject: ({ requeue }) => settle((b) => b.reject(msg, requeue)),
      isLive: () => this.channel === channel && generation === this.generation,
    }
    try {
      const result = this.handler(delivery)
      if (result instanceof Promise) result.catch((err: unknown) => this.host.report(err, `handler for '${this.queue}'`))
    } catch (err) {
      this.host.report(err, `handler for '${this.queue}'`)
    }
  }

  /**
   * RabbitMQ cancels a consumer whose queue was deleted. If this transport
   * declared the queue, declare it again and keep consuming (a cancel means
   * set up again, not go quiet); otherwise the consumer ends.
   */
  private async onServerCancel(channel: Channel, generation: number): Promise<void> {
    if (this.cancelled || generation !== this.generation) return
    try {
      const redeclared = await this.host.redeclareQueue(channel, this.queue)
      if (redeclared && !this.cancelled && generation === this.generation) {
        await channel.consume(this.queue, (msg) => this.onMessage(channel, generation, msg), {
          noAck: this.noAck,
          consumerTag: this.tag,
          ...(this.consumeArguments ? { arguments: this.consumeArguments } : {}),
        })
        return
      }
    } catch (err) {
      if (this.conn && this.host.connectionUsable(this.conn)) this.host.report(err, `resume consumer on '${this.queue}'`)
    }
    this.cancelled = true
    this.host.forget(this)
    this.closeIfDrained()
  }
}
