// RabbitMQ through amqplib. One connection; one channel for declarations, one
// confirm channel for publishing (both reopened after a channel error), and one
// channel per consumer. After a lost connection it reconnects with backoff,
// replays the recorded topology and restarts every consumer. Given a failover
// list (`amqp://a//;amqp://b//`, the nodes of a cluster), it moves to the next
// URL on every failed attempt, as kombu does, and backs off only once a whole
// round of them has failed.
//
// With `separatePublisher` (a worker), publishes go on a second connection,
// as kombu keeps its producer pool apart from the consumer's connection:
// RabbitMQ's memory and disk alarms block a connection once it publishes, and
// a blocked connection reads no frame at all, acks and declarations included.
import { EventEmitter } from 'node:events'
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
import { AmqpConsumer, type ConsumerHost } from './amqp-consumer.js'
import { reconnectDelayMs, sleep } from './connection/backoff.js'
import { ackTimeoutOf, classifyAmqpError, describeConnectFailure, isChannelError, isNack } from './classify-error.js'
import { FailoverCycle, maskUrl, splitUrlList, type FailoverStrategy } from '../url.js'
import { amqpConnectSettings, type AmqpConnectSettings, type AmqpUrlSettings } from './connection/connect-options.js'
import {
  declareDelayedDelivery,
  delayedDeliveryBindingKey,
  delayedPublishTarget,
  DELAYED_DELIVERY_EXCHANGE,
  MAX_DELAY_SECONDS,
  type DelayedQueueType,
} from './delayed-delivery.js'
import { openAmqpConnection } from './connection/open-connection.js'
import { watchHeartbeats } from './connection/heartbeat.js'
import { choosePublisher, publishFields, type Publisher, type PublishFields } from './publish.js'
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

/** A publish given a timeout, until its confirm or its deadline. */
interface TimedSend {
  deadline: number
  timeoutMs: number
  what: string
  /** Its frames were handed to a connection: it may reach the broker whatever happens next. */
  written: boolean
  done: boolean
  fail: (err: Error) => void
}

/** Closing a connection the broker has blocked would wait for a close-ok it never sends. */
function destroyConnection(conn: ChannelModel): void {
  const stream = (conn as unknown as { connection?: { stream?: { destroy?: (err?: Error) => void } } }).connection?.stream
  // With an error: amqplib closes its side on the socket's 'error' (its heartbeat timer too), not on a bare 'close'.
  if (typeof stream?.destroy === 'function') stream.destroy(new Error('closed while the broker blocks the connection'))
  else void conn.close().catch(() => undefined)
}

let connectionSeq = 0

export class AmqpTransport extends EventEmitter implements Transport {
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
  /** broker_native_delayed_delivery_queue_type, when the app says it (else classic, then quorum). */
  private readonly delayedQueueType: DelayedQueueType | undefined
  private state: State = 'idle'
  private conn: ChannelModel | null = null
  private readonly deadConnections = new WeakSet<ChannelModel>()
  private controlChannel: Promise<Channel> | null = null
  private publishChannel: Promise<ConfirmChannel> | null = null
  /** publishChannel once open: a publish on it needs no await while it is still the current one. */
  private openPublishChannel: { opening: Promise<ConfirmChannel>; channel: ConfirmChannel } | null = null
  /** The broker's reason a channel closed, read by publishes whose confirm failed. */
  private readonly channelCloseErrors = new WeakMap<Channel, Error>()
  private readonly topology = new TopologyRegistry()
  private readonly consumers = new Set<AmqpConsumer>()
  private connecting: Promise<void> | null = null
  private closing: Promise<void> | null = null
  private closedWhere = ''
  private stateWaiters: Array<() => void> = []
  private readonly stopReconnect = new AbortController()
  private readonly consumerHost: ConsumerHost
  /** kombu 5.5's delayed-delivery ladder, declared on the first delayed publish. */
  private delayedLadder: Promise<void> | null = null
  /** Queues bound to the ladder's exit, so a delayed message comes back to them. */
  private readonly delayedQueues = new Map<string, Promise<void>>()
  private readonly separatePublisher: boolean
  /** How a message goes on a channel (publish.ts): amqplib's publish, or the direct one. */
  private readonly sender: Publisher
  /** How declareTopology declares (tricks/nowait-declare.ts, or one round trip per method). */
  private readonly declareTopologyOn: (channel: Channel, t: TopologySpec) => Promise<void>
  /** The publishing connection, with separatePublisher; opened on the first publish. */
  private publisher: Promise<ChannelModel> | null = null
  /** Unconfirmed publishes (control casts, replies) on the publishing connection. */
  private castChannel: Promise<Channel> | null = null
  /** Connections the broker said it blocks, and the reason announced (null: none). */
  private readonly blockedConnections = new Set<ChannelModel>()
  private announcedBlock: string | null = null
  /** Publishes with a timeout, oldest first, and the one timer for the earliest deadline. */
  private timedSends: TimedSend[] = []
  private deadlineTimer: NodeJS.Timeout | null = null
  private armedFor = Infinity

  constructor(url: string, urlSettings: AmqpTransportSettings = {}) {
    super()
    const urls = splitUrlList(url)
    this.nodes = new FailoverCycle(
      urls.map((u) => amqpConnectSettings(u, urlSettings)),
      urlSettings.failoverStrategy,
    )
    this.displayUrl = maskUrl(urls.join(';'))
    this.delayedQueueType = urlSettings.delayedQueueType
    this.separatePublisher = urlSettings.separatePublisher === true
    this.sender = choosePublisher()
    this.declareTopologyOn = trickOn('nowaitDeclare') && amqplibAsMeasured() ? declareTopologyNowait : declareTopologyPlain
    connectionSeq += 1
    this.connectionName = `tsq-${process.pid}-${connectionSeq}`
    this.consumerHost = {
      report: (err, what) => this.report(err, what),
      forget: (consumer) => this.consumers.delete(consumer),
      redeclareQueue: (channel, queue) => this.redeclareQueue(channel, queue),
      connectionUsable: (conn) => this.state === 'open' && this.conn === conn,
      deliveriesLost: (consumer, reason) => this.emitSafely('deliveries:lost', { queue: consumer.queue, reason, ...ackTimeoutOf(reason) }),
    }
  }

  override on<E extends keyof TransportEvents>(event: E, listener: TransportEvents[E]): this {
    return super.on(event, listener)
  }

  override off<E extends keyof TransportEvents>(event: E, listener: TransportEvents[E]): this {
    return super.off(event, listener)
  }

  async connect(): Promise<void> {
    if (this.state === 'open' || this.state === 'reconnecting') return
    if (this.state === 'closed') throw this.closedError()
    if (this.connecting) return this.connecting
    this.setState('connecting')
    this.connecting = (async () => {
      try {
        const conn = await this.openFirstConnection()
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
    return this.announcedBlock
  }

  publish(exchange: string, routingKey: string, message: OutgoingMessage, publishOptions?: PublishOptions): Promise<void> {
    const fields = publishFields(exchange, routingKey, message.properties)
    const body = message.body
    if (publishOptions?.confirm === false) {
      const what = `publish to exchange '${exchange}' key '${routingKey}'`
      if (this.separatePublisher)
        return this.retrying(what, async (conn) => this.sender.unconfirmed(await this.castChannelFor(conn), fields, body))
      return this.withControl(what, async (channel) => this.sender.unconfirmed(channel, fields, body))
    }
    const timeoutMs = publishOptions?.timeoutMs
    if (timeoutMs !== undefined && timeoutMs > 0)
      return this.timedPublish(`publish to exchange '${exchange}' key '${routingKey}'`, fields, body, timeoutMs)
    const again = (conn: ChannelModel): Promise<void> =>
      this.publishChannelFor(conn).then((channel) => this.confirmedPublish(channel, fields, body))
    const open = this.openPublishChannel
    if (this.state === 'open' && this.conn && open && open.opening === this.publishChannel) {
      // The channel is up: publish in this turn, so the sends made beside this
      // one share its socket write, with no await before. Only a failure takes
      // the retrying path, as its first attempt. One promise per send: the
      // confirm settles it, or hands it to the retrying path.
      return this.confirmedPublish(open.channel, fields, body, (err) =>
        this.retrying(`publish to exchange '${exchange}' key '${routingKey}'`, again, err),
      )
    }
    return this.retrying(`publish to exchange '${exchange}' key '${routingKey}'`, again)
  }

  /**
   * publish() with a deadline: one timer for all pending ones (armDeadline),
   * none per message. Past it the send fails, saying whether its frames left
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
        this.publishChannelFor(conn).then((channel) => {
          if (send.done) throw this.timeoutError(send)
          send.written = true
          return this.confirmedPublish(channel, fields, body)
        })
      this.trackDeadline(send)
      const open = this.openPublishChannel
      if (this.state === 'open' && this.conn && open && open.opening === this.publishChannel) {
        send.written = true
        this.confirmedPublish(open.channel, fields, body, (err) => this.retrying(what, again, err)).then(ok, failed)
      } else this.retrying(what, again).then(ok, failed)
    })
  }

  private trackDeadline(send: TimedSend): void {
    this.timedSends.push(send)
    // A shorter timeout than the pending ones' re-arms the timer for its earlier deadline.
    if (!this.deadlineTimer || send.deadline < this.armedFor) {
      if (this.deadlineTimer) clearTimeout(this.deadlineTimer)
      this.armDeadline()
    }
  }

  /** Fails the sends past their deadline, drops the settled, and waits for the next deadline. */
  private armDeadline(): void {
    this.deadlineTimer = null
    const now = Date.now()
    let next = Infinity
    const pending: TimedSend[] = []
    for (const send of this.timedSends) {
      if (send.done) continue
      if (send.deadline <= now) {
        send.done = true
        send.fail(this.timeoutError(send))
        continue
      }
      pending.push(send)
      next = Math.min(next, send.deadline)
    }
    this.timedSends = pending
    this.armedFor = next
    if (pending.length > 0) this.deadlineTimer = setTimeout(() => this.armDeadline(), next - now)
  }

  private timeoutError(send: TimedSend): PublishTimeoutError {
    const seconds = `${+(send.timeoutMs / 1000).toFixed(3)} s`
    const blocked = this.announcedBlock !== null ? `: the broker blocks publishing (${this.announcedBlock})` : ''
    return send.written
      ? new PublishTimeoutError(
          `${send.what} not confirmed within ${seconds}${blocked}; the message may still be delivered, so sending it again may run the task twice`,
          true,
        )
      : new PublishTimeoutError(
          `${send.what} not sent within ${seconds}${blocked || ' (no connection to the broker)'}; the message was not sent`,
          false,
        )
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
          if (err) fail(this.channelCloseErrors.get(channel) ?? err)
          else {
            // A confirm means the broker reads again: a block lost with its connection is over.
            if (this.announcedBlock !== null && this.blockedConnections.size === 0) this.announceUnblocked()
            resolve()
          }
        })
      } catch (err) {
        fail(err)
      }
    })
  }

  /**
   * Through kombu 5.5's native delayed delivery (delayed-delivery.ts): the
   * ladder of TTL queues holds the message for `delaySeconds`, then its exit
   * exchange routes it back by `#.<queue>`, which binds `queue` itself:
   * Celery binds the queue's exchange instead, which cannot work for the
   * direct exchanges Celery's own queues use.
   */
  async publishDelayed(queue: string, message: OutgoingMessage, delaySeconds: number): Promise<void> {
    // Declaring the ladder the first time takes seconds on a cluster (28
    // quorum queues); that time comes off the delay, so the message is not late.
    const asked = Date.now()
    await this.prepareDelayedDelivery()
    let bound = this.delayedQueues.get(queue)
    if (!bound) {
      bound = this.bindQueue(queue, DELAYED_DELIVERY_EXCHANGE, delayedDeliveryBindingKey(queue)).catch((err: unknown) => {
        this.delayedQueues.delete(queue)
        throw err
      })
      this.delayedQueues.set(queue, bound)
    }
    await bound
    // Whole seconds of it: the ladder counts whole seconds, and taking the
    // binding's few ms off a whole-second delay before flooring made a queue's
    // first delayed message a second early.
    const remaining = Math.floor(delaySeconds) - Math.round((Date.now() - asked) / 1000)
    const target = delayedPublishTarget(Math.min(Math.max(0, remaining), MAX_DELAY_SECONDS), queue)
    // Without the expiration property: RabbitMQ drops it on dead-lettering anyway,
    // and a shorter one would let the message out of the ladder early.
    const { expiration: _expiration, ...properties } = message.properties
    await this.publish(target.exchange, target.routingKey, { body: message.body, properties })
  }

  /** Declares the ladder once per transport (a worker at start-up, as Celery 5.5's DelayedDelivery bootstep). */
  prepareDelayedDelivery(): Promise<void> {
    this.delayedLadder ??= this.declareDelayedLadder().catch((err: unknown) => {
      this.delayedLadder = null
      throw err
    })
    return this.delayedLadder
  }

  /**
   * Celery 5.5 declares the ladder's queues as quorum queues by default, kombu
   * as classic ones where asked: whichever came first stays, so the other
   * type is tried when RabbitMQ says the first is not equivalent.
   */
  private async declareDelayedLadder(): Promise<void> {
    const attempt = (type: DelayedQueueType) =>
      this.withControl('declare the delayed-delivery queues (celery_delayed_*)', (ch) => declareDelayedDelivery(ch, type))
    // In a cluster the ladder must be quorum: a classic queue lives on one
    // node, and a message routed to it while that node is down is dropped.
    const first = this.delayedQueueType ?? 'classic'
    try {
      await attempt(first)
    } catch (err) {
      if (!(err instanceof BrokerRequestError) || !/x-queue-type/.test(err.message)) throw err
      await attempt(first === 'classic' ? 'quorum' : 'classic')
    }
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
      this.controlChannel = null
      this.publishChannel = null
      this.castChannel = null
      const publisher = this.publisher
      this.publisher = null
      if (this.deadlineTimer) clearTimeout(this.deadlineTimer)
      this.deadlineTimer = null
      for (const send of this.timedSends.splice(0)) {
        if (send.done) continue
        send.done = true
        send.fail(
          send.written
            ? new PublishTimeoutError(
                `${send.what}: the transport closed before the broker confirmed it; the message may still be delivered`,
                true,
              )
            : this.closedError(),
        )
      }
      const consumers = [...this.consumers]
      this.consumers.clear()
      // amqplib multiplexes channel frames behind connection-level ones, so an
      // ack sent just before close could be overtaken by connection.close and
      // lost. Closing each consumer channel first flushes its acks. A blocked
      // connection reads nothing, close-ok included: it is dropped instead.
      const blocked = conn !== null && this.blockedConnections.has(conn)
      if (blocked) for (const c of consumers) void c.closeChannel()
      else await Promise.all(consumers.map((c) => c.closeChannel()))
      await Promise.all([
        conn ? this.closeConnection(conn) : undefined,
        publisher?.then(
          (p) => this.closeConnection(p),
          () => undefined,
        ),
      ])
    })()
    return this.closing
  }

  // ---- connection lifecycle ------------------------------------------------

  private async closeConnection(conn: ChannelModel): Promise<void> {
    if (this.blockedConnections.has(conn)) destroyConnection(conn)
    else await conn.close().catch(() => undefined)
  }

  /** RabbitMQ's connection.blocked / unblocked, said once per alarm whichever connections hear it. */
  private watchBlocked(conn: ChannelModel): void {
    conn.on('blocked', (reason: unknown) => {
      this.blockedConnections.add(conn)
      if (this.announcedBlock !== null) return
      this.announcedBlock = typeof reason === 'string' && reason !== '' ? reason : 'no reason given'
      this.emitSafely('connection:blocked', this.announcedBlock)
    })
    conn.on('unblocked', () => {
      this.blockedConnections.delete(conn)
      if (this.blockedConnections.size === 0 && this.announcedBlock !== null) this.announceUnblocked()
    })
  }

  private announceUnblocked(): void {
    this.announcedBlock = null
    this.emitSafely('connection:unblocked')
  }

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
    this.watchBlocked(conn)
    return conn
  }

  /**
   * The first connection: one try of each URL of the list, so a command
   * given a cluster reaches it through any node that is up. All down: the
   * error names every URL tried.
   */
  private async openFirstConnection(): Promise<ChannelModel> {
    const failures: string[] = []
    for (;;) {
      try {
        const conn = await this.openConnection()
        this.nodes.succeeded()
        return conn
      } catch (err) {
        if (!(err instanceof BrokerConnectionError) || this.nodes.entries.length === 1) throw err
        failures.push(err.message)
        if (this.nodes.failed()) {
          throw new BrokerConnectionError(`cannot connect to any broker of ${this.displayUrl}: ${failures.join('; ')}`, { cause: err })
        }
      }
    }
  }

  private onConnectionClosed(conn: ChannelModel, err: Error | undefined): void {
    this.deadConnections.add(conn)
    // Not unblocked: the alarm may go on; the next confirm or unblocked says so.
    this.blockedConnections.delete(conn)
    if (conn !== this.conn) return
    this.conn = null
    this.controlChannel = null
    // A publish channel on the publishing connection outlives this one.
    if (!this.separatePublisher) this.publishChannel = null
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

  /**
   * The node just lost counts as a failed attempt: with a list the next URL
   * is tried at once; the back-off comes after each round in which every URL
   * failed (with one URL, before every attempt, as before lists).
   */
  private async reconnect(): Promise<void> {
    let round = 0
    let delayMs = this.nodes.failed() ? reconnectDelayMs(round++) : 0
    // Each failed attempt is said once (connection:retry), with the wait that follows it.
    const failed = (attempt: number, url: string, err: unknown): void => {
      const backOff = this.nodes.failed()
      delayMs = backOff ? reconnectDelayMs(round++) : 0
      const reason = err instanceof Error ? err.message.replace(`cannot connect to ${url}: `, '') : String(err)
      if (this.state === 'reconnecting') this.emitSafely('connection:retry', { url, reason, attempt, delayMs, failover: !backOff })
    }
    for (let attempt = 1; this.state === 'reconnecting'; attempt += 1) {
      if (delayMs > 0) await sleep(delayMs, this.stopReconnect.signal)
      if (this.state !== 'reconnecting') return
      const url = this.nodes.current.displayUrl
      let conn: ChannelModel
      try {
        conn = await this.openConnection()
      } catch (err) {
        failed(attempt, url, err)
        continue
      }
      try {
        await this.restoreOn(conn)
      } catch (err) {
        await conn.close().catch(() => undefined)
        failed(attempt, url, err)
        continue
      }
      if (this.state !== 'reconnecting' || this.deadConnections.has(conn)) {
        await conn.close().catch(() => undefined)
        failed(attempt, url, new Error('connection closed while its topology was restored'))
        continue
      }
      this.nodes.succeeded()
      this.conn = conn
      this.setState('open')
      this.emitSafely('connection:restored')
      return
    }
  }

  /** Replays the topology, then restarts consumers; throws if the connection fails meanwhile. */
  private async restoreOn(conn: ChannelModel): Promise<void> {
    const openChannel = async (): Promise<Channel> => {
      const ch = await conn.createChannel()
      ch.on('error', () => undefined)
      return ch
    }
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
    if (!this.controlChannel) {
      const opening: Promise<Channel> = conn.createChannel().then((ch) => {
        ch.on('error', () => undefined)
        ch.on('close', () => {
          if (this.controlChannel === opening) this.controlChannel = null
        })
        return ch
      })
      opening.catch(() => {
        if (this.controlChannel === opening) this.controlChannel = null
      })
      this.controlChannel = opening
    }
    return this.controlChannel
  }

  /** The connection publishes go on: `conn` itself, or with separatePublisher one of their own, opened on first use. */
  private publishingConnection(conn: ChannelModel): Promise<ChannelModel> {
    if (!this.separatePublisher) return Promise.resolve(conn)
    if (!this.publisher) {
      const opening: Promise<ChannelModel> = openAmqpConnection(this.nodes.current, `${this.connectionName}-publish`).then((pc) => {
        pc.on('error', () => undefined)
        watchHeartbeats(pc, this.nodes.current.heartbeatCheckrate)
        pc.on('close', () => {
          this.blockedConnections.delete(pc)
          if (this.publisher === opening) this.publisher = null
        })
        this.watchBlocked(pc)
        if (this.state === 'closed') {
          void pc.close().catch(() => undefined)
          throw this.closedError()
        }
        return pc
      })
      opening.catch(() => {
        if (this.publisher === opening) this.publisher = null
      })
      this.publisher = opening
    }
    return this.publisher
  }

  private castChannelFor(conn: ChannelModel): Promise<Channel> {
    if (!this.castChannel) {
      const opening: Promise<Channel> = this.publishingConnection(conn)
        .then((pc) => pc.createChannel())
        .then((ch) => {
          ch.on('error', () => undefined)
          ch.on('close', () => {
            if (this.castChannel === opening) this.castChannel = null
          })
          return ch
        })
      opening.catch(() => {
        if (this.castChannel === opening) this.castChannel = null
      })
      this.castChannel = opening
    }
    return this.castChannel
  }

  private publishChannelFor(conn: ChannelModel): Promise<ConfirmChannel> {
    if (!this.publishChannel) {
      const opening: Promise<ConfirmChannel> = this.publishingConnection(conn)
        .then((pc) => pc.createConfirmChannel())
        .then((ch) => {
          ch.on('error', (err: Error) => this.channelCloseErrors.set(ch, err))
          ch.on('close', () => {
            if (this.publishChannel === opening) this.publishChannel = null
            if (this.openPublishChannel?.channel === ch) this.openPublishChannel = null
          })
          if (this.publishChannel === opening) this.openPublishChannel = { opening, channel: ch }
          return ch
        })
      opening.catch(() => {
        if (this.publishChannel === opening) this.publishChannel = null
      })
      this.publishChannel = opening
    }
    return this.publishChannel
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
