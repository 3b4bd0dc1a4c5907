// RabbitMQ through amqplib. One connection; one channel for declarations, one
// confirm channel for publishing (both reopened after a channel error), and one
// channel per consumer. After a lost connection it reconnects with backoff,
// replays the recorded topology and restarts every consumer. Given a failover
// list (`amqp://a//;amqp://b//`, the nodes of a cluster), it moves to the next
// URL on every failed attempt, as kombu does, and backs off only once a whole
// round of them has failed (connection/failover.ts). With `separatePublisher`
// (a worker), publishes go on a second connection (publish-channels.ts).
import type { Channel, ChannelModel, ConfirmChannel } from 'amqplib'
import { BrokerConnectionError, BrokerRequestError, PublishTimeoutError, TransportClosedError } from '../errors.js'
import type {
  CloseOptions,
  ConsumeOptions,
  Consumer,
  DeliveryHandler,
  ExchangeSpec,
  OutgoingMessage,
  PublishOptions,
  QueueSpec,
  QueueStatus,
  TopologySpec,
  Transport,
  TransportCapabilities,
  TransportEvents,
} from '../transport.js'
import { TransportEmitter } from '../transport-emitter.js'
import { AmqpConsumer, type ConsumerHost } from './amqp-consumer.js'
import { reconnectDelayMs, sleep } from './connection/backoff.js'
import { BlockedConnections } from './connection/blocked.js'
import { openFirstReachable, reconnectThroughList } from './connection/failover.js'
import { ackTimeoutOf, classifyAmqpError, describeConnectFailure, isChannelError, isNack } from './classify-error.js'
import { FailoverCycle, maskUrl, splitUrlList, type FailoverStrategy } from '../url.js'
import { amqpConnectSettings, type AmqpConnectSettings, type AmqpUrlSettings } from './connection/connect-options.js'
import { ChannelSlot } from './channel-slot.js'
import { PublishChannels, quiet } from './publish-channels.js'
import { declareDelayedDelivery, DelayedPublisher, type DelayedQueueType } from './delayed-delivery.js'
import { openAmqpConnection } from './connection/open-connection.js'
import { watchHeartbeats } from './connection/heartbeat.js'
import { choosePublisher, publishFields, type Publisher, type PublishFields } from './publish.js'
import { PublishDeadlines, type TimedSend } from './publish-deadlines.js'
import { assertExchange, assertQueue, declareTopologyPlain, TopologyRegistry } from './topology.js'
import { amqplibAsMeasured } from './tricks/amqplib-pin.js'
import { declareTopologyNowait } from './tricks/nowait-declare.js'
import { trickOn } from '../../tricks/index.js'

/** Attempts per operation across channel reopenings and reconnects before giving up. */
const MAX_ATTEMPTS = 8

type State = 'idle' | 'connecting' | 'open' | 'reconnecting' | 'closed'

export interface AmqpTransportSettings extends AmqpUrlSettings {
  /** broker_failover_strategy, for a list of URLs. */
  failoverStrategy?: FailoverStrategy
  /** broker_native_delayed_delivery_queue_type: the x-queue-type of the celery_delayed_* queues. */
  delayedQueueType?: DelayedQueueType
  /** Publishes on a connection of their own, so consuming and acking go on while the broker blocks publishing (a worker). */
  separatePublisher?: boolean
}

let connectionSeq = 0

export class AmqpTransport extends TransportEmitter implements Transport {
  readonly kind = 'amqp' as const
  readonly displayUrl: string
  readonly capabilities: TransportCapabilities = {
    priority: 'higher-first',
    queueTtl: true,
    fanoutNeedsLiveSubscriber: false,
    exclusiveQueues: true,
    autoDeleteOnCancel: true,
  }
  /** client_properties.connection_name: `tsq-<pid>-<n>`, so operators and tests can find it. */
  readonly connectionName: string

  /** The failover list's connect settings, and which one is in use. */
  private readonly nodes: FailoverCycle<AmqpConnectSettings>
  private state: State = 'idle'
  private conn: ChannelModel | null = null
  private readonly deadConnections = new WeakSet<ChannelModel>()
  private readonly controlChannel = new ChannelSlot<Channel>()
  private readonly topology = new TopologyRegistry()
  private readonly consumers = new Set<AmqpConsumer>()
  private connecting: Promise<void> | null = null
  private closing: Promise<void> | null = null
  private closedWhere = ''
  private stateWaiters: Array<() => void> = []
  private readonly stopReconnect = new AbortController()
  private readonly consumerHost: ConsumerHost
  /** kombu 5.5's delayed-delivery ladder (delayed-delivery.ts). */
  private readonly delayed: DelayedPublisher
  private readonly separatePublisher: boolean
  /** How a message goes on a channel (publish.ts): amqplib's publish, or the direct one. */
  private readonly sender: Publisher
  /** How declareTopology declares (tricks/nowait-declare.ts, or one round trip per method). */
  private readonly declareTopologyOn: (channel: Channel, t: TopologySpec) => Promise<void>
  /** RabbitMQ's alarms, on any of this transport's connections. */
  private readonly blocked = new BlockedConnections(
    (reason) => this.emitSafely('connection:blocked', reason),
    () => this.emitSafely('connection:unblocked'),
  )
  /** Where publishes go (publish-channels.ts). */
  private readonly publishing: PublishChannels
  private readonly deadlines = new PublishDeadlines(() => this.blocked.reason)

  constructor(url: string, urlSettings: AmqpTransportSettings = {}) {
    super()
    const urls = splitUrlList(url)
    this.nodes = new FailoverCycle(
      urls.map((u) => amqpConnectSettings(u, urlSettings)),
      urlSettings.failoverStrategy,
    )
    this.displayUrl = maskUrl(urls.join(';'))
    this.delayed = new DelayedPublisher({
      queueType: urlSettings.delayedQueueType,
      declareLadder: (type) =>
        this.withControl('declare the delayed-delivery queues (celery_delayed_*)', (ch) => declareDelayedDelivery(ch, type)),
      bindQueue: (queue, exchange, routingKey) => this.bindQueue(queue, exchange, routingKey),
      publish: (exchange, routingKey, message) => this.publish(exchange, routingKey, message),
    })
    this.separatePublisher = urlSettings.separatePublisher === true
    this.sender = choosePublisher()
    this.declareTopologyOn = trickOn('nowaitDeclare') && amqplibAsMeasured() ? declareTopologyNowait : declareTopologyPlain
    connectionSeq += 1
    this.connectionName = `tsq-${process.pid}-${connectionSeq}`
    this.publishing = new PublishChannels({
      separatePublisher: this.separatePublisher,
      connectionName: this.connectionName,
      blocked: this.blocked,
      node: () => this.nodes.current,
      closedError: () => (this.state === 'closed' ? this.closedError() : null),
    })
    this.consumerHost = {
      report: (err, what) => this.report(err, what),
      forget: (consumer) => this.consumers.delete(consumer),
      redeclareQueue: (channel, queue) => this.redeclareQueue(channel, queue),
      connectionUsable: (conn) => this.state === 'open' && this.conn === conn,
      deliveriesLost: (consumer, reason) => this.emitSafely('deliveries:lost', { queue: consumer.queue, reason, ...ackTimeoutOf(reason) }),
    }
  }

  async connect(): Promise<void> {
    if (this.state === 'open' || this.state === 'reconnecting') return
    if (this.state === 'closed') throw this.closedError()
    if (this.connecting) return this.connecting
    this.setState('connecting')
    this.connecting = (async () => {
      try {
        const conn = await openFirstReachable(this.nodes, () => this.openConnection(), this.displayUrl)
        if (this.state === 'closed') {
          await conn.close().catch(() => undefined)
          throw this.closedError()
        }
        this.conn = conn
        this.setState('open')
      } catch (err) {
        if (this.state === 'connecting') this.setState('idle')
        throw err
      } finally {
        this.connecting = null
      }
    })()
    return this.connecting
  }

  async declareExchange(spec: ExchangeSpec): Promise<void> {
    // The default exchange and amq.* exist already and may not be declared by clients.
    if (spec.name === '' || spec.name.startsWith('amq.')) return
    await this.withControl(`declare exchange '${spec.name}'`, (ch) => assertExchange(ch, spec))
    this.topology.addExchange(spec)
  }

  async declareQueue(spec: QueueSpec): Promise<{ messageCount: number }> {
    const result = await this.withControl(`declare queue '${spec.name}'`, (ch) => assertQueue(ch, spec))
    if (spec.name !== '') this.topology.addQueue(spec)
    return result
  }

  async bindQueue(queue: string, exchange: string, routingKey: string): Promise<void> {
    // Every queue is bound to the default exchange by name; RabbitMQ refuses explicit binds to it.
    if (exchange === '') return
    await this.withControl(`bind queue '${queue}' to '${exchange}'`, (ch) => ch.bindQueue(queue, exchange, routingKey))
    this.topology.addBinding({ queue, exchange, routingKey })
  }

  async declareTopology(t: TopologySpec): Promise<void> {
    await this.withControl(`declare queue '${t.queue.name}' and its bindings`, (ch) => this.declareTopologyOn(ch, t))
    for (const ex of t.exchanges) if (ex.name !== '' && !ex.name.startsWith('amq.')) this.topology.addExchange(ex)
    if (t.queue.name !== '') this.topology.addQueue(t.queue)
    for (const b of t.bindings) if (b.exchange !== '') this.topology.addBinding({ queue: t.queue.name, ...b })
  }

  async unbindQueue(queue: string, exchange: string, routingKey: string): Promise<void> {
    if (exchange === '') return
    this.topology.removeBinding({ queue, exchange, routingKey })
    await this.withControl(`unbind queue '${queue}' from '${exchange}'`, (ch) => ch.unbindQueue(queue, exchange, routingKey))
  }

  async deleteQueue(queue: string): Promise<void> {
    // Forget it first, so consumers the broker cancels do not declare it again.
    this.topology.removeQueue(queue)
    await this.withControl(`delete queue '${queue}'`, (ch) => ch.deleteQueue(queue))
  }

  async purge(queue: string): Promise<number> {
    const reply = await this.withControl(`purge queue '${queue}'`, (ch) => ch.purgeQueue(queue))
    return reply.messageCount
  }

  /** A passive queue.declare: 404 (the queue does not exist) closes only the control channel, which is reopened. */
  async checkQueue(queue: string): Promise<QueueStatus | null> {
    try {
      const reply = await this.withControl(`check queue '${queue}'`, (ch) => ch.checkQueue(queue))
      return { messageCount: reply.messageCount, consumerCount: reply.consumerCount }
    } catch (err) {
      if (err instanceof BrokerRequestError && err.code === 'NOT_FOUND') return null
      throw err
    }
  }

  /** The broker's reason while it blocks publishing on any of this transport's connections. */
  get blockedReason(): string | null {
    return this.blocked.reason
  }

  publish(exchange: string, routingKey: string, message: OutgoingMessage, publishOptions?: PublishOptions): Promise<void> {
    const fields = publishFields(exchange, routingKey, message.properties)
    const body = message.body
    if (publishOptions?.confirm === false) {
      const what = `publish to exchange '${exchange}' key '${routingKey}'`
      if (this.separatePublisher)
        return this.retrying(what, async (conn) => this.sender.unconfirmed(await this.publishing.castChannelFor(conn), fields, body))
      return this.withControl(what, async (channel) => this.sender.unconfirmed(channel, fields, body))
    }
    const timeoutMs = publishOptions?.timeoutMs
    if (timeoutMs !== undefined && timeoutMs > 0)
      return this.timedPublish(`publish to exchange '${exchange}' key '${routingKey}'`, fields, body, timeoutMs)
    const again = (conn: ChannelModel): Promise<void> =>
      this.publishing.confirmChannelFor(conn).then((channel) => this.confirmedPublish(channel, fields, body))
    const open = this.publishing.confirm.ready
    if (this.state === 'open' && this.conn && open) {
      // The channel is up: publish in this turn, so the sends made beside this
      // one share its socket write, with no await before. Only a failure takes
      // the retrying path, as its first attempt. One promise per send: the
      // confirm settles it, or hands it to the retrying path.
      return this.confirmedPublish(open, fields, body, (err) =>
        this.retrying(`publish to exchange '${exchange}' key '${routingKey}'`, again, err),
      )
    }
    return this.retrying(`publish to exchange '${exchange}' key '${routingKey}'`, again)
  }

  /**
   * publish() with a deadline: one timer for all pending ones
   * (publish-deadlines.ts), none per message. Past it the send fails, saying whether its frames left
   * (the message may still be delivered) or not (it never will be: a retry
   * after the deadline does not publish).
   */
  private timedPublish(what: string, fields: PublishFields, body: Buffer, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const send: TimedSend = { deadline: Date.now() + timeoutMs, timeoutMs, what, written: false, done: false, fail: reject }
      const ok = (): void => {
        if (send.done) return
        send.done = true
        resolve()
      }
      const failed = (err: unknown): void => {
        if (send.done) return
        send.done = true
        reject(err)
      }
      const again = (conn: ChannelModel): Promise<void> =>
        this.publishing.confirmChannelFor(conn).then((channel) => {
          if (send.done) throw this.deadlines.timeoutError(send)
          send.written = true
          return this.confirmedPublish(channel, fields, body)
        })
      this.deadlines.track(send)
      const open = this.publishing.confirm.ready
      if (this.state === 'open' && this.conn && open) {
        send.written = true
        this.confirmedPublish(open, fields, body, (err) => this.retrying(what, again, err)).then(ok, failed)
      } else this.retrying(what, again).then(ok, failed)
    })
  }

  /**
   * Resolves on the broker's confirm, so an awaited publish survives a broker
   * drop. A failure rejects, or, given `recover`, settles as recover's does:
   * still one promise per send.
   */
  private confirmedPublish(
    channel: ConfirmChannel,
    fields: PublishFields,
    body: Buffer,
    recover?: (err: unknown) => Promise<void>,
  ): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const fail = (err: unknown): void => {
        if (recover) recover(err).then(resolve, reject)
        else reject(err)
      }
      try {
        this.sender.confirmed(channel, fields, body, (err) => {
          if (err) fail(this.publishing.closeErrorOf(channel) ?? err)
          else {
            this.blocked.confirmed()
            resolve()
          }
        })
      } catch (err) {
        fail(err)
      }
    })
  }

  /** Through kombu 5.5's native delayed delivery (delayed-delivery.ts): the broker holds the message, not a consumer. */
  publishDelayed(queue: string, message: OutgoingMessage, delaySeconds: number): Promise<void> {
    return this.delayed.publish(queue, message, delaySeconds)
  }

  /** Declares the ladder once per transport (a worker at start-up, as Celery 5.5's DelayedDelivery bootstep). */
  prepareDelayedDelivery(): Promise<void> {
    return this.delayed.prepare()
  }

  async consume(queue: string, handler: DeliveryHandler, options: ConsumeOptions = {}): Promise<Consumer> {
    const consumer = new AmqpConsumer(queue, handler, options, this.consumerHost)
    await this.retrying(`consume from queue '${queue}'`, async (conn) => {
      await consumer.start(conn)
      // Started on a connection that died meanwhile: the reconnect may not have
      // seen this consumer, so start it again on the new one.
      if (!this.consumerHost.connectionUsable(conn)) throw new BrokerConnectionError('connection lost while starting consumer')
    })
    this.consumers.add(consumer)
    return consumer
  }

  /**
   * RabbitMQ hands unacked deliveries back to their queues whenever a channel or
   * connection closes, so `requeueUnacked: false` cannot leave them unacked
   * here; they are requeued either way, which loses nothing.
   */
  close(_options: CloseOptions = {}): Promise<void> {
    if (this.closing) return this.closing
    this.closedWhere = new Error('transport closed').stack?.split('\n')[2]?.trim() ?? ''
    this.closing = (async () => {
      this.setState('closed')
      this.stopReconnect.abort()
      const conn = this.conn
      this.conn = null
      this.controlChannel.reset()
      const publisher = this.publishing.close()
      this.deadlines.failAll(() => this.closedError())
      const consumers = [...this.consumers]
      this.consumers.clear()
      // amqplib multiplexes channel frames behind connection-level ones, so an
      // ack sent just before close could be overtaken by connection.close and
      // lost. Closing each consumer channel first flushes its acks. A blocked
      // connection reads nothing, close-ok included: it is dropped instead.
      const blocked = conn !== null && this.blocked.has(conn)
      if (blocked) for (const c of consumers) void c.closeChannel()
      else await Promise.all(consumers.map((c) => c.closeChannel()))
      await Promise.all([
        conn ? this.blocked.close(conn) : undefined,
        publisher?.then(
          (p) => this.blocked.close(p),
          () => undefined,
        ),
      ])
    })()
    return this.closing
  }

  // ---- connection lifecycle ------------------------------------------------

  /** The masked URL of the node in use (connected, or tried next). */
  get connectedUrl(): string {
    return this.nodes.current.displayUrl
  }

  /** Host, port, vhost and user of the node in use, for `inspect stats` (Celery's broker field). */
  get connectedNode(): { hostname: string; port: number; vhost: string; username: string } {
    const c = this.nodes.current.connect
    return { hostname: c.hostname ?? 'localhost', port: c.port ?? 5672, vhost: c.vhost ?? '/', username: c.username ?? 'guest' }
  }

  /** The failover list, masked, for `inspect stats` (kombu's alternates). */
  get alternates(): string[] {
    return this.nodes.entries.length > 1 ? this.nodes.entries.map((n) => n.displayUrl) : []
  }

  private async openConnection(): Promise<ChannelModel> {
    const conn = await openAmqpConnection(this.nodes.current, this.connectionName)
    conn.on('error', () => undefined)
    watchHeartbeats(conn, this.nodes.current.heartbeatCheckrate)
    conn.on('close', (err?: Error) => this.onConnectionClosed(conn, err))
    this.blocked.watch(conn)
    return conn
  }

  private onConnectionClosed(conn: ChannelModel, err: Error | undefined): void {
    this.deadConnections.add(conn)
    this.blocked.forget(conn)
    if (conn !== this.conn) return
    this.conn = null
    this.controlChannel.reset()
    this.publishing.connectionLost()
    for (const consumer of this.consumers) consumer.detach()
    if (this.state !== 'open') return
    this.setState('reconnecting')
    const lost = new BrokerConnectionError(
      `lost connection to ${this.connectedUrl}: ${describeConnectFailure(err ?? new Error('closed by broker'))}`,
      {
        cause: err,
      },
    )
    this.emitSafely('connection:lost', lost)
    void this.reconnect()
  }

  /** Through the failover list (connection/failover.ts), until restored or closed. */
  private reconnect(): Promise<void> {
    return reconnectThroughList({
      nodes: this.nodes,
      signal: this.stopReconnect.signal,
      wanted: () => this.state === 'reconnecting',
      open: () => this.openConnection(),
      restore: (conn) => this.restoreOn(conn),
      usable: (conn) => !this.deadConnections.has(conn),
      adopt: (conn) => {
        this.conn = conn
        this.setState('open')
        this.emitSafely('connection:restored')
      },
      retry: (retry) => this.emitSafely('connection:retry', retry),
    })
  }

  /** Replays the topology, then restarts consumers; throws if the connection fails meanwhile. */
  private async restoreOn(conn: ChannelModel): Promise<void> {
    const openChannel = async (): Promise<Channel> => quiet(await conn.createChannel())
    await this.topology.replay(openChannel, (err, what) => {
      if (isChannelError(err)) this.report(err, what)
    })
    // Until restore completes connectionUsable(conn) is false, so a consumer
    // channel failing now is left to the next reconnect attempt, not restarted.
    for (const consumer of [...this.consumers]) {
      try {
        await consumer.start(conn)
      } catch (err) {
        if (!(err instanceof BrokerRequestError)) throw err
        this.report(err, `restart consumer on '${consumer.queue}'`)
        this.consumers.delete(consumer)
      }
    }
  }

  private setState(state: State): void {
    this.state = state
    const waiters = this.stateWaiters
    this.stateWaiters = []
    for (const wake of waiters) wake()
  }

  /** The open connection, connecting first if needed and waiting out a reconnect. */
  private async ready(): Promise<ChannelModel> {
    for (;;) {
      if (this.state === 'open' && this.conn) return this.conn
      if (this.state === 'closed') throw this.closedError()
      if (this.state === 'idle' || this.state === 'connecting') await this.connect()
      else await new Promise<void>((resolve) => this.stateWaiters.push(resolve))
    }
  }

  private closedError(): TransportClosedError {
    return new TransportClosedError(`transport to ${this.displayUrl} is closed${this.closedWhere ? ` (closed ${this.closedWhere})` : ''}`)
  }

  // ---- channels and operations ---------------------------------------------

  private controlChannelFor(conn: ChannelModel): Promise<Channel> {
    return this.controlChannel.get(() => conn.createChannel().then(quiet))
  }

  private withControl<T>(what: string, run: (channel: Channel) => Promise<T>): Promise<T> {
    return this.retrying(what, async (conn) => run(await this.controlChannelFor(conn)))
  }

  /**
   * Runs `op` on the open connection. The broker refusing the request surfaces
   * at once as BrokerRequestError; a channel closed under it (by another
   * operation's error) or a lost connection means try again on a fresh channel,
   * after the reconnect if there is one.
   */
  private async retrying<T>(what: string, op: (conn: ChannelModel) => Promise<T>, firstError?: unknown): Promise<T> {
    let lastError: unknown
    // `firstError`: the caller made the first attempt itself, and it failed so.
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      try {
        if (attempt === 0 && firstError !== undefined) throw firstError
        const conn = await this.ready()
        return await op(conn)
      } catch (err) {
        if (err instanceof PublishTimeoutError) throw err
        // A nack is the broker's answer, not a lost path: said at once, as py-amqp's MessageNacked is.
        if (err instanceof BrokerRequestError || isChannelError(err) || isNack(err)) throw classifyAmqpError(err, what)
        if (this.state === 'closed') throw this.closedError()
        lastError = err
        if (this.state === 'open') await sleep(reconnectDelayMs(attempt))
      }
    }
    throw classifyAmqpError(lastError, what)
  }

  private async redeclareQueue(channel: Channel, queue: string): Promise<boolean> {
    const spec = this.topology.queue(queue)
    if (!spec) return false
    await assertQueue(channel, spec)
    for (const b of this.topology.bindingsOf(queue)) await channel.bindQueue(b.queue, b.exchange, b.routingKey)
    return true
  }

  private report(err: unknown, what: string): void {
    if (this.state === 'closed') return
    const error = classifyAmqpError(err, what)
    if (this.listenerCount('error') > 0) this.emitSafely('error', error)
    else process.emitWarning(error.message, 'TsqTransportWarning')
  }

  /** A listener that throws must not break the transport's own bookkeeping. */
  private emitSafely<E extends keyof TransportEvents>(event: E, ...args: Parameters<TransportEvents[E]>): void {
    try {
      this.emit(event, ...args)
    } catch (err) {
      process.emitWarning(`listener for '${event}' threw: ${err instanceof Error ? err.message : String(err)}`, 'TsqTransportWarning')
    }
  }
}
