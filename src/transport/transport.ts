// The one contract every broker implements, in AMQP vocabulary. Celery semantics
// (task messages, pidbox, events) live above this layer; a transport knows only
// exchanges, queues, bindings, envelopes and acknowledgements.

export type ExchangeType = 'direct' | 'fanout' | 'topic'

export interface ExchangeSpec {
  name: string
  type: ExchangeType
  durable: boolean
  autoDelete: boolean
}

export interface QueueArguments {
  /** Milliseconds a queue may go unused before the broker deletes it. */
  'x-expires'?: number
  /** Milliseconds a message may wait in the queue before it is dropped. */
  'x-message-ttl'?: number
  'x-max-priority'?: number
  /** Most ready messages the queue keeps; the oldest go first (RabbitMQ's drop-head). */
  'x-max-length'?: number
  /** Where the broker sends a message it rejects or expires (RabbitMQ's dead-lettering). */
  'x-dead-letter-exchange'?: string
  'x-dead-letter-routing-key'?: string
  /** `lazy`: RabbitMQ keeps the queue on disk (celery-amqp-events' archive). */
  'x-queue-mode'?: string
  /** Any other argument an app's task_queues gives (queue_arguments), passed as it is. */
  [key: string]: string | number | undefined
}

export interface QueueSpec {
  name: string
  durable: boolean
  exclusive: boolean
  autoDelete: boolean
  arguments?: QueueArguments
}

/**
 * Header values as they travel in AMQP tables and in kombu's Redis JSON envelope.
 * A bigint is an integer a double cannot hold exactly (a Python sender's 64-bit value).
 */
export type HeaderValue = string | number | bigint | boolean | null | HeaderValue[] | { [key: string]: HeaderValue }
export type Headers = Record<string, HeaderValue>

export interface MessageProperties {
  /**
   * Set on a delivery whose header table could not be read (a type no client
   * writes): `headers` is then empty, and the message should be rejected.
   */
  unreadableHeaders?: string
  contentType: string
  contentEncoding: string
  headers: Headers
  /** 1 transient, 2 persistent. */
  deliveryMode: 1 | 2
  priority: number
  correlationId?: string
  replyTo?: string
  /** Milliseconds, as a decimal string (AMQP `expiration`). */
  expiration?: string
  /** AMQP `app-id` (Celery's `apply_async(app_id=...)`), shown to the task in request.properties. */
  appId?: string
}

/**
 * Sets the optional properties `from` has (strings as they are, the expiration
 * as its text) on `props`, and leaves the others unset: set one by one, as a
 * conditional spread in a literal is a slow clone in V8, per delivery.
 */
export function setOptionalProperties(
  props: MessageProperties,
  from: { correlationId?: unknown; replyTo?: unknown; appId?: unknown; expiration?: unknown },
): MessageProperties {
  if (typeof from.correlationId === 'string') props.correlationId = from.correlationId
  if (typeof from.replyTo === 'string') props.replyTo = from.replyTo
  if (typeof from.appId === 'string') props.appId = from.appId
  if (from.expiration !== undefined && from.expiration !== null) props.expiration = String(from.expiration)
  return props
}

export interface OutgoingMessage {
  body: Buffer
  properties: MessageProperties
}

export interface Delivery {
  body: Buffer
  properties: MessageProperties
  exchange: string
  routingKey: string
  /** The queue this delivery was consumed from. */
  queue: string
  redelivered: boolean
  /** Opaque, unique within the transport (uuid4 on Redis, as kombu). */
  deliveryTag: string
  /** Ack and reject are no-ops for deliveries from a noAck consumer. */
  ack(): Promise<void>
  reject(options: { requeue: boolean }): Promise<void>
  /**
   * Brokers that redeliver after a visibility timeout (Redis) count it from
   * this time instead of from delivery, so an ETA task held until its ETA is
   * not handed to a second worker (Celery's duplicate-ETA bug). Absent where
   * the broker needs no such help.
   */
  deferVisibility?(untilUnixSeconds: number): Promise<void>
  /**
   * False once the broker has taken the delivery back: its channel or
   * connection closed (AMQP), or the visibility timeout restored it (Redis).
   * The broker delivers it again, so a copy held in memory must not run.
   * Absent where a delivery cannot be taken back while its consumer lives.
   */
  isLive?(): boolean
}

export interface PublishOptions {
  /**
   * false: resolve once the message is written, without waiting for the
   * broker's confirm. For remote-control casts and replies, which Celery sends
   * the same way: a lost one shows as a missing reply, and a one-shot CLI
   * saves the round trips of a confirm channel.
   */
  confirm?: boolean
  /**
   * A confirmed publish not confirmed within this many ms fails with
   * PublishTimeoutError (which says whether the message may still be
   * delivered) instead of waiting out a blocked broker. Absent: it waits.
   */
  timeoutMs?: number
}

export interface ConsumeOptions {
  /** Maximum unacked deliveries in flight for this consumer; 0 or absent means unlimited. */
  prefetch?: number
  /** Deliveries need no ack (pidbox, events, replies). */
  noAck?: boolean
  /**
   * The prefetch binds this consumer only, set once as it starts (AMQP basic.qos
   * global=false): RabbitMQ refuses channel-wide QoS on a quorum queue. setPrefetch
   * then changes nothing until the consumer starts again.
   */
  perConsumerPrefetch?: boolean
  /** AMQP basic.consume arguments (task_queues' consumer_arguments, e.g. x-priority); brokers without them ignore them, as kombu's virtual transports do. */
  arguments?: Record<string, string | number>
}

export type DeliveryHandler = (delivery: Delivery) => void | Promise<void>

export interface Consumer {
  readonly queue: string
  readonly tag: string
  /** Stop receiving. Unacked deliveries stay unacked until acked, rejected or the transport closes. */
  cancel(): Promise<void>
  /** Change the prefetch window (worker prefetch reduction, ETA tasks). */
  setPrefetch(prefetch: number): Promise<void>
}

export interface TransportCapabilities {
  /** Higher number is served first (AMQP x-max-priority) or lower is (kombu Redis steps). */
  priority: 'higher-first' | 'lower-first' | 'none'
  /** Broker enforces x-message-ttl / x-expires itself. */
  queueTtl: boolean
  /** Fanout delivers only to subscribers connected at publish time (Redis pub/sub). */
  fanoutNeedsLiveSubscriber: boolean
  exclusiveQueues: boolean
  /** The broker deletes an auto-delete queue itself once its last consumer is cancelled. */
  autoDeleteOnCancel: boolean
}

/** Why deliveries of one consumer were taken back by the broker. */
export interface DeliveriesLost {
  queue: string
  /** The broker's reason, where it gave one (a channel closed by an error). */
  reason: Error | null
  /**
   * The broker closed the channel because a delivery stayed unacknowledged
   * past its consumer timeout (RabbitMQ's `consumer_timeout`), in ms as the
   * broker reported it (0 when it did not say).
   */
  ackTimeoutMs?: number
}

/** What a passive check of a queue finds (`checkQueue`). */
export interface QueueStatus {
  messageCount: number
  /** null where the broker does not track consumers (Redis). */
  consumerCount: number | null
}

/**
 * Where a message waits, found by its task id without consuming it
 * (`locateMessage`): ready in a queue, with the messages ahead of it, or
 * delivered to a consumer that has not acked it.
 */
export interface MessageLocation {
  where: 'queue' | 'unacked'
  queue: string
  /** Ready messages of `queue` a consumer takes before it (0: it is next), in the order the broker hands them out. */
  position: number | null
  /** Ready messages in `queue`, all priorities. */
  depth: number | null
}

/** What a search of the queues found (`locateMessage`). */
export interface LocateResult {
  found: MessageLocation | null
  /** Ready messages per queue searched. */
  depths: Record<string, number>
  /** Messages looked at; a search stops at its limit, so a miss past it is no proof. */
  scanned: number
  /** True when a limit stopped the search before it saw every message. */
  truncated: boolean
}

/** A message the broker keeps outside any queue until its time, or until it is taken out (Parking). */
export interface ParkedMessage {
  /** Unique within its lot. */
  id: string
  /** The queue it goes to when released. */
  queue: string
  /** Its time, ms since the epoch: when it is due (a retry), or when it was parked (an archive). */
  at: number
  message: OutgoingMessage
  /** The delivery info it carries once released. */
  exchange: string
  routingKey: string
}

export interface ParkOptions {
  /** Keep at most this many messages in the lot; the oldest (by time) go first. */
  maxLength?: number
  /** Drop the messages whose time is older than this many ms. */
  maxAgeMs?: number
}

/**
 * Named lots of messages that a broker without dead-lettering (Redis, file)
 * keeps outside any queue: retries waiting for their time, and archives. A
 * message moves from a lot into its queue in one atomic step, so a process
 * that dies mid-move loses nothing. Absent on RabbitMQ, whose TTL queues and
 * dead-letter exchanges do the same.
 */
export interface Parking {
  park(
    lot: string,
    target: { queue: string; exchange: string; routingKey: string },
    message: OutgoingMessage,
    at: number,
    options?: ParkOptions,
  ): Promise<void>
  /** Moves every message of `lots` that is due (time <= now) into its queue; returns how many, and the time of the next one due (null: none). */
  releaseDue(lots: readonly string[]): Promise<{ moved: number; nextAt: number | null }>
  /** Oldest first. */
  list(lot: string, options?: { limit?: number }): Promise<ParkedMessage[]>
  /** Removes these messages; returns how many were there. */
  drop(lot: string, ids: readonly string[]): Promise<number>
  count(lot: string): Promise<number>
}

/** One failed attempt to get a lost connection back, and what comes next. */
export interface ConnectionRetry {
  /** The broker tried, password masked. */
  url: string
  /** Why the attempt failed, one line. */
  reason: string
  /** 1 for the first attempt after the loss. */
  attempt: number
  /** Wait before the next attempt, ms (0 with a failover list: the next URL at once). */
  delayMs: number
  /** The next attempt goes to another URL of the failover list. */
  failover: boolean
}

export interface TransportEvents {
  'connection:lost': (error: Error) => void
  /** After each failed reconnect attempt, before the wait (Celery's "Cannot connect to ... Trying again"). */
  'connection:retry': (retry: ConnectionRetry) => void
  'connection:restored': () => void
  /** Deliveries still unsettled on `queue` are no longer live (see Delivery.isLive). */
  'deliveries:lost': (lost: DeliveriesLost) => void
  /** The broker stopped reading this transport's publishes (a RabbitMQ memory or disk alarm); `reason` is its own, e.g. `low on memory`. Once per alarm. */
  'connection:blocked': (reason: string) => void
  /** The alarm cleared: publishes go out again. Once, after 'connection:blocked'. */
  'connection:unblocked': () => void
  error: (error: Error) => void
}

export interface BrokerNode {
  hostname: string
  port: number
  vhost: string
  username: string
}

export interface CloseOptions {
  /** Hand unacked deliveries back to their queues (default true). */
  requeueUnacked?: boolean
}

export interface TopologySpec {
  exchanges: readonly ExchangeSpec[]
  queue: QueueSpec
  bindings: ReadonlyArray<{ exchange: string; routingKey: string }>
}

export interface Transport {
  /** The broker URL with its password masked, for logs and banners (every URL of a failover list). */
  readonly displayUrl: string
  /** Of a failover list, the masked URL of the node in use now; absent where there is one URL only. */
  readonly connectedUrl?: string
  /** Host, port, vhost and user of the node in use (`inspect stats`' broker); absent where not networked. */
  readonly connectedNode?: BrokerNode
  /** The failover list, masked (kombu's `alternates`): empty for one URL. */
  readonly alternates?: readonly string[]
  readonly kind: 'amqp' | 'redis' | 'file'
  readonly capabilities: TransportCapabilities
  /** The broker's reason while it blocks this transport's publishes (RabbitMQ's connection.blocked), else null; absent where brokers do not say. */
  readonly blockedReason?: string | null

  connect(): Promise<void>
  declareExchange(spec: ExchangeSpec): Promise<void>
  /** Returns the number of ready messages. */
  declareQueue(spec: QueueSpec): Promise<{ messageCount: number }>
  bindQueue(queue: string, exchange: string, routingKey: string): Promise<void>
  /**
   * The exchanges, then the queue, then its bindings, in as few round trips as
   * the broker allows (one on RabbitMQ, instead of one each); resolves once all
   * are in place and rejects with the broker's first refusal. Absent where
   * declaring one by one costs nothing more.
   */
  declareTopology?(topology: TopologySpec): Promise<void>
  unbindQueue(queue: string, exchange: string, routingKey: string): Promise<void>
  deleteQueue(queue: string): Promise<void>
  /** Exchange '' is the default exchange: routingKey names the queue. */
  publish(exchange: string, routingKey: string, message: OutgoingMessage, options?: PublishOptions): Promise<void>
  /**
   * Has the broker hold `message` for `delaySeconds` (whole seconds) and then
   * put it in `queue`, confirmed before it resolves: a worker need not hold an
   * ETA task past the broker's consumer timeout. Absent where the broker cannot.
   */
  publishDelayed?(queue: string, message: OutgoingMessage, delaySeconds: number): Promise<void>
  /** Declares what publishDelayed needs ahead of the first one (it takes seconds on a cluster). */
  prepareDelayedDelivery?(): Promise<void>
  consume(queue: string, handler: DeliveryHandler, options?: ConsumeOptions): Promise<Consumer>
  /** Removes ready messages; returns how many. */
  purge(queue: string): Promise<number>
  /** A passive look at a queue: its depth and consumers, or null when it does not exist. Declares nothing. */
  checkQueue?(queue: string): Promise<QueueStatus | null>
  /** Lots of parked messages, where the broker has no dead-lettering (Redis, file). */
  readonly parking?: Parking
  /**
   * Finds a task's message by its id in `queues` (every priority list) and
   * among the delivered-but-unacked, reading only. Absent where a queue
   * cannot be read without taking its messages (RabbitMQ).
   */
  locateMessage?(taskId: string, queues: readonly string[], options?: { limit?: number }): Promise<LocateResult>
  close(options?: CloseOptions): Promise<void>

  on<E extends keyof TransportEvents>(event: E, listener: TransportEvents[E]): this
  off<E extends keyof TransportEvents>(event: E, listener: TransportEvents[E]): this
}
