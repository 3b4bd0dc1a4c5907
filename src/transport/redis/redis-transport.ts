// The Redis broker in kombu 5.2.4's exact layout (spec §4), so a Python Celery
// worker or client shares queues, bindings, pidbox and unacked keys with tsq.
import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import { TransportClosedError } from '../errors.js'
import type {
  CloseOptions,
  ConsumeOptions,
  Consumer,
  DeliveryHandler,
  ExchangeSpec,
  OutgoingMessage,
  LocateResult,
  Parking,
  QueueSpec,
  QueueStatus,
  TopologySpec,
  Transport,
  TransportCapabilities,
} from '../transport.js'
import { TransportEmitter } from '../transport-emitter.js'
import { maskUrl } from '../url.js'
import { execChecked } from './batch.js'
import { AckTracker } from './consume/ack-tracker.js'
import { BrpopLoop } from './consume/brpop-loop.js'
import { classifyRedisError } from './classify-error.js'
import { BusyPoll } from './tricks/busy-poll.js'
import { ClaimOverlap } from './tricks/claim-overlap.js'
import { ioredisAsMeasured } from './tricks/ioredis-pin.js'
import { trickOn } from '../../tricks/index.js'
import { closeConnection, createConnection } from './connections.js'
import { RedisHealth } from './health.js'
import { makeDelivery } from './consume/deliveries.js'
import { dispatch, HandOver } from './consume/hand-over.js'
import { encodeEnvelope, parseEnvelope } from '../kombu-envelope.js'
import { FanoutConsumer, FanoutHub } from './consume/fanout.js'
import { STAGING_OWNER_TTL_MS, type RedisKeys } from './keys.js'
import { ConsumerSet, ListConsumer } from './consume/list-consumers.js'
import { resolveRedisOptions, type RedisTransportOptions, type ResolvedRedisOptions } from './options.js'
import { retryWhileDemoted } from './sentinel.js'
import { RedisExchangeTable } from './routing.js'
import { UnackedStore } from './consume/unacked.js'
import { RedisParkingStore } from './parking.js'
import { locateOnRedis } from './locate.js'
import { VirtualExchanges } from '../virtual/exchanges.js'
import { VirtualParking } from '../virtual/parking.js'
import { KOMBU_TOPIC } from '../virtual/topic.js'
import { PublishBatcher } from './publish-batch.js'

export type { RedisTransportOptions } from './options.js'

let instances = 0

export class RedisTransport extends TransportEmitter implements Transport {
  readonly kind = 'redis' as const
  readonly capabilities: TransportCapabilities = {
    priority: 'lower-first',
    queueTtl: false,
    fanoutNeedsLiveSubscriber: true,
    exclusiveQueues: false,
    autoDeleteOnCancel: false,
  }
  readonly displayUrl: string
  /** CLIENT SETNAME prefix of this transport's connections (`<name>-cmd`, `-brpop`, `-sub`). */
  readonly connectionName: string

  private readonly options: ResolvedRedisOptions
  /** Every key and channel name (global_keyprefix, sep, priority_steps, fanout_prefix...). */
  private readonly keys: RedisKeys
  private readonly overlapClaims: boolean
  private readonly health: RedisHealth
  private state: 'new' | 'open' | 'closing' | 'closed' = 'new'
  private connecting: Promise<void> | undefined
  private closing: Promise<void> | undefined
  private cmd: Redis | undefined
  /** Exchanges as kombu's virtual transport emulates them (virtual/), over the binding sets of `table`. */
  private exchanges: VirtualExchanges | undefined
  private table: RedisExchangeTable | undefined
  private unacked: UnackedStore | undefined
  private loop: Promise<BrpopLoop> | undefined
  private loopRunning: BrpopLoop | undefined
  /** Names this process's staging lists; its owner key says the process is alive. */
  private readonly loopId = randomUUID()
  private ownerTimer: NodeJS.Timeout | undefined
  private brpopConn: Redis | undefined
  private hub: Promise<FanoutHub> | undefined
  private subConn: Redis | undefined
  private readonly consumers: ConsumerSet
  private readonly fanoutConsumers = new Set<FanoutConsumer>()
  private acks: AckTracker | undefined
  private handOver: HandOver | undefined
  private readonly autoDelete = new Set<string>()
  private restoreTimer: NodeJS.Timeout | undefined
  private restoring = false
  private readonly publishes = new PublishBatcher(
    () => this.cmd!,
    (error, key) => classifyRedisError(error, `publish to ${key}`, this.displayUrl),
    trickOn('lpushWire') && ioredisAsMeasured(),
  )
  /** Parking lots (parking.ts): the events bus's retries and archives. */
  readonly parking: Parking

  constructor(url: string, options: RedisTransportOptions = {}) {
    super()
    instances += 1
    this.displayUrl = maskUrl(url)
    this.options = resolveRedisOptions(url, {
      ...options,
      connectionName: options.connectionName ?? `tsq-${process.pid}-${instances}`,
    })
    this.connectionName = this.options.connectionName
    this.keys = this.options.keys
    this.overlapClaims = options.overlapClaims === true
    this.consumers = new ConsumerSet(this.options.queueOrderStrategy)
    this.health = new RedisHealth(this, this.displayUrl, () => this.state === 'open')
    this.parking = new VirtualParking(
      new RedisParkingStore(
        async () => (await this.ready()).cmd,
        (where, run) => this.guard(where, run),
        this.keys,
      ),
    )
  }

  get visibilityTimeout(): number {
    return this.options.visibilityTimeout
  }

  connect(): Promise<void> {
    if (this.state === 'closing' || this.state === 'closed') return Promise.reject(this.closedError())
    this.connecting ??= (async () => {
      const { conn, open } = createConnection(this.options, 'cmd', this.health.watcher)
      try {
        await open()
      } catch (error) {
        this.connecting = undefined
        throw error
      }
      this.cmd = conn
      const table = (this.table = new RedisExchangeTable(conn, this.keys))
      this.exchanges = new VirtualExchanges(
        {
          typeOf: (exchange) => table.typeOf(exchange),
          table: (exchange) => table.table(exchange),
          storeBinding: (exchange, type, row) => table.storeBinding(exchange, type, row),
          put: (queues, exchange, routingKey, message) => this.putInLists(queues, exchange, routingKey, message),
          // kombu `_put_fanout`: pub/sub, so only a queue consuming now hears it (spec §4.5).
          putFanout: async (exchange, routingKey, message) => {
            await conn.publish(this.keys.publishChannel(exchange, routingKey), encodeEnvelope(exchange, routingKey, message))
          },
        },
        KOMBU_TOPIC,
      )
      this.unacked = new UnackedStore(conn, (exchange, routingKey) => this.exchanges!.lookup(exchange, routingKey), this.keys)
      this.acks = new AckTracker(this.unacked, {
        assertOpen: () => {
          if (this.state === 'closed') throw this.closedError()
        },
        // Once per ack: the loop itself, not a then() on its promise (before it exists there is nothing to nudge).
        settled: () => this.loopRunning?.nudge(),
        classify: (error, where) => classifyRedisError(error, where, this.displayUrl),
      })
      this.handOver = new HandOver(this.consumers, this.acks, this.unacked, conn, () => this.state === 'open', this.health.emitError)
      this.state = 'open'
    })()
    return this.connecting
  }

  private closedError(): TransportClosedError {
    return new TransportClosedError(`redis transport ${this.displayUrl} is closed`)
  }

  private async ready(): Promise<{ cmd: Redis; table: RedisExchangeTable; exchanges: VirtualExchanges; unacked: UnackedStore }> {
    if (this.state === 'closing' || this.state === 'closed') throw this.closedError()
    if (this.state !== 'open') await this.connect()
    return { cmd: this.cmd!, table: this.table!, exchanges: this.exchanges!, unacked: this.unacked! }
  }

  private async guard<T>(where: string, run: () => Promise<T>): Promise<T> {
    try {
      // Through Sentinels a failover refuses commands for a moment; those are safe to send again.
      return await (this.options.sentinel ? retryWhileDemoted(run) : run())
    } catch (error) {
      throw classifyRedisError(error, where, this.displayUrl)
    }
  }

  async declareExchange(spec: ExchangeSpec): Promise<void> {
    const { table } = await this.ready()
    await this.guard(`declare exchange ${spec.name}`, () => table.declare(spec.name, spec.type))
  }

  async declareQueue(spec: QueueSpec): Promise<{ messageCount: number }> {
    const { cmd } = await this.ready()
    if (spec.autoDelete) this.autoDelete.add(spec.name)
    // Redis has no queue object: the declare is kombu's MULTI of four LLENs.
    return this.guard(`declare queue ${spec.name}`, async () => {
      const batch = cmd.multi()
      for (const key of this.keys.lists(spec.name)) batch.llen(key)
      const sizes = (await execChecked(batch)) as number[]
      return { messageCount: sizes.reduce((a, b) => a + b, 0) }
    })
  }

  async bindQueue(queue: string, exchange: string, routingKey: string): Promise<void> {
    const { exchanges } = await this.ready()
    if (!exchange) return
    await this.guard(`bind ${queue} to ${exchange}`, () => exchanges.bind(queue, exchange, routingKey))
  }

  /** Redis has no queue object: only the bindings are written (no LLENs of a declare, whose count nobody reads here). */
  async declareTopology(t: TopologySpec): Promise<void> {
    await Promise.all(t.exchanges.map((ex) => this.declareExchange(ex)))
    if (t.queue.autoDelete) this.autoDelete.add(t.queue.name)
    await Promise.all(t.bindings.map((b) => this.bindQueue(t.queue.name, b.exchange, b.routingKey)))
  }

  async unbindQueue(queue: string, exchange: string, routingKey: string): Promise<void> {
    const { table } = await this.ready()
    if (!exchange) return
    await this.guard(`unbind ${queue} from ${exchange}`, () => table.unbind(queue, exchange, routingKey))
  }

  async deleteQueue(queue: string): Promise<void> {
    const { cmd, table } = await this.ready()
    this.autoDelete.delete(queue)
    await this.guard(`delete queue ${queue}`, async () => {
      const batch = cmd.multi()
      for (const [key, member] of table.forgetQueue(queue)) batch.srem(key, member)
      batch.del(...this.keys.lists(queue))
      await execChecked(batch)
    })
  }

  async purge(queue: string): Promise<number> {
    const { cmd } = await this.ready()
    return this.guard(`purge ${queue}`, async () => {
      const batch = cmd.multi()
      for (const key of this.keys.lists(queue)) batch.llen(key).del(key)
      const results = (await execChecked(batch)) as number[]
      return results.filter((_, i) => i % 2 === 0).reduce((a, b) => a + b, 0)
    })
  }

  /** kombu's declare without the queue: the priority lists' lengths. Redis keeps no consumer count. */
  async checkQueue(queue: string): Promise<QueueStatus> {
    return {
      messageCount: (await this.declareQueue({ name: queue, durable: true, exclusive: false, autoDelete: false })).messageCount,
      consumerCount: null,
    }
  }

  /** Reads the lists and `unacked` in Redis itself (locate.ts); nothing moves. */
  async locateMessage(taskId: string, queues: readonly string[], options: { limit?: number } = {}): Promise<LocateResult> {
    const { cmd } = await this.ready()
    return this.guard(`locate ${taskId}`, () => locateOnRedis(cmd, this.keys, taskId, queues, options.limit))
  }

  publish(exchange: string, routingKey: string, message: OutgoingMessage): Promise<void> {
    // A task send (the default exchange, a connection up, no Sentinel whose
    // failover wants the retry in guard()) goes straight to the batcher: no
    // await before the LPUSH is queued, no closures per send.
    if (!exchange && this.state === 'open' && !this.options.sentinel) {
      try {
        return this.publishes.push(
          this.keys.list(routingKey, this.keys.step(message.properties.priority)),
          encodeEnvelope(exchange, routingKey, message),
        )
      } catch (error) {
        return Promise.reject(error)
      }
    }
    return this.publishRouted(exchange, routingKey, message)
  }

  private async publishRouted(exchange: string, routingKey: string, message: OutgoingMessage): Promise<void> {
    const { exchanges } = await this.ready()
    await this.guard(`publish to ${exchange || '(default)'}/${routingKey}`, () => exchanges.publish(exchange, routingKey, message))
  }

  /** kombu `_put`: an LPUSH to each queue's list for the message's priority (the default exchange's through the batcher). */
  private async putInLists(queues: readonly string[], exchange: string, routingKey: string, message: OutgoingMessage): Promise<void> {
    const step = this.keys.step(message.properties.priority)
    if (!exchange) {
      await this.publishes.push(this.keys.list(queues[0]!, step), encodeEnvelope(exchange, routingKey, message))
      return
    }
    const batch = this.cmd!.pipeline()
    // A fresh delivery tag per copy, so two copies never share one `unacked` entry.
    for (const queue of queues) batch.lpush(this.keys.list(queue, step), encodeEnvelope(exchange, routingKey, message))
    await execChecked(batch)
  }

  async consume(queue: string, handler: DeliveryHandler, options: ConsumeOptions = {}): Promise<Consumer> {
    const { table } = await this.ready()
    const fanout = table.fanoutBindings.get(queue)
    if (fanout) return this.consumeFanout(queue, handler, fanout)
    const loop = await this.ensureLoop()
    const consumer = new ListConsumer(queue, randomUUID(), handler, options.prefetch ?? 0, options.noAck ?? false, {
      cancel: async (c) => {
        c.cancelled = true
        this.consumers.remove(c)
        loop.nudge()
      },
      changed: () => loop.nudge(),
    })
    this.consumers.add(consumer)
    loop.start()
    loop.nudge()
    this.startRestoreTimer()
    return consumer
  }

  private async consumeFanout(
    queue: string,
    handler: DeliveryHandler,
    bindings: ReadonlyArray<{ exchange: string; routingKey: string }>,
  ): Promise<Consumer> {
    const hub = await this.ensureHub()
    const patterns = [...new Set(bindings.flatMap((b) => this.keys.subscribePatterns(b.exchange, b.routingKey)))]
    const onMessage = (raw: string, q: string): void => {
      try {
        // Pub/sub cannot redeliver, so fanout deliveries are always noAck.
        dispatch(handler, makeDelivery(parseEnvelope(raw), q), this.health.emitError)
      } catch (error) {
        this.health.emitError(error)
      }
    }
    const consumer = new FanoutConsumer(queue, patterns, hub, onMessage, (c) => this.fanoutConsumers.delete(c))
    await this.guard(`subscribe ${queue}`, () => hub.add(consumer))
    this.fanoutConsumers.add(consumer)
    return consumer
  }

  private ensureLoop(): Promise<BrpopLoop> {
    this.loop ??= (async () => {
      const { conn, open } = createConnection(this.options, 'brpop', this.health.watcher)
      this.brpopConn = conn
      await open()
      const refreshOwner = () =>
        this.cmd?.set(this.keys.stagingOwner(this.loopId), String(process.pid), 'PX', STAGING_OWNER_TTL_MS).catch(() => undefined)
      await refreshOwner()
      this.ownerTimer = setInterval(() => void refreshOwner(), STAGING_OWNER_TTL_MS / 3)
      this.ownerTimer.unref()
      return (this.loopRunning = new BrpopLoop(
        conn,
        this.cmd!,
        {
          readyQueues: () => this.consumers.ready(),
          deliver: (queue, key, raw) => this.handOver!.popped(queue, key, raw),
          idle: () => undefined,
          failed: (error) => this.health.loopFailed(error),
          wantsClaim: (queues) => {
            for (const q of queues) if (this.consumers.hasAcking(q)) return true
            return false
          },
          claimRoom: (queues) => ({ room: this.consumers.room(queues), window: this.consumers.window(queues) }),
          claim: (keys, _queues, max) =>
            this.unacked!.claim(
              keys,
              keys.map((k) => this.consumers.hasAcking(this.keys.queueOfList(k))),
              max,
            ),
          deliverClaimed: (queue, key, raw, recordedAs) => this.handOver!.popped(queue, key, raw, recordedAs),
          claimStaged: (source) =>
            this.unacked!.claimStaged(this.keys.stagingKey(this.loopId, source), this.consumers.hasAcking(this.keys.queueOfList(source))),
          stagingFor: (source) => this.keys.stagingKey(this.loopId, source),
          openBlocker: async () => {
            const extra = createConnection(this.options, 'brpop', this.health.watcher)
            await extra.open()
            return extra.conn
          },
        },
        this.keys,
        ...this.claimTricks(),
      ))
    })().catch((error: unknown) => {
      this.loop = undefined
      throw error
    })
    return this.loop
  }

  /** The claim loop's tricks (tricks/claim-overlap.ts, tricks/busy-poll.ts), for a consumer that asked for them and as the switches allow. */
  private claimTricks(): [ClaimOverlap | undefined, BusyPoll | undefined, boolean] {
    const split = this.overlapClaims && trickOn('claimOverlap')
    const poll = this.overlapClaims && trickOn('busyPoll')
    // Busy polling asks the same CPU reading whether to poll, so it keeps one when the split is off.
    return [split || poll ? new ClaimOverlap() : undefined, poll ? new BusyPoll() : undefined, split]
  }

  private ensureHub(): Promise<FanoutHub> {
    this.hub ??= (async () => {
      const { conn, open } = createConnection(this.options, 'sub', this.health.watcher)
      this.subConn = conn
      await open()
      return new FanoutHub(conn)
    })().catch((error: unknown) => {
      this.hub = undefined
      throw error
    })
    return this.hub
  }

  private startRestoreTimer(): void {
    if (this.restoreTimer) return
    void this.restoreVisible()
    this.restoreTimer = setInterval(() => void this.restoreVisible().then(() => this.checkHeld()), this.options.restoreIntervalMs)
    this.restoreTimer.unref()
  }

  /**
   * kombu `restore_visible`: put back messages unacked for longer than the
   * visibility timeout, whoever delivered them. Returns how many (-1: lock held).
   */
  async restoreVisible(): Promise<number> {
    if (this.restoring || this.state !== 'open') return 0
    this.restoring = true
    try {
      return await this.unacked!.restoreVisible(this.options.visibilityTimeout)
    } catch (error) {
      // The next pass tries again; a refusal that lasts (a queue's key of another type) is said, as a refused claim is.
      this.health.loopFailed(error, 'restoring unacked messages')
      return 0
    } finally {
      this.restoring = false
    }
  }

  /**
   * Held deliveries that a visibility-timeout pass (this process's or another
   * worker's) gave back to their queues are no longer this worker's to run:
   * the same rule as a closed AMQP channel.
   */
  private async checkHeld(): Promise<void> {
    if (this.state !== 'open' || !this.acks) return
    let lost: Array<{ queue: string }>
    try {
      lost = await this.acks.findLost(this.options.visibilityTimeout)
    } catch {
      return
    }
    for (const queue of new Set(lost.map((l) => l.queue))) this.emit('deliveries:lost', { queue, reason: null })
  }

  close(options: CloseOptions = {}): Promise<void> {
    this.closing ??= this.shutdown(options.requeueUnacked ?? true)
    return this.closing
  }

  private async shutdown(requeueUnacked: boolean): Promise<void> {
    await this.connecting?.catch(() => undefined)
    const wasOpen = this.state === 'open'
    this.state = 'closing'
    if (wasOpen) await this.publishes.drain()
    clearInterval(this.restoreTimer)
    for (const consumer of this.consumers.all()) {
      consumer.cancelled = true
      this.consumers.remove(consumer)
    }
    for (const consumer of [...this.fanoutConsumers]) await consumer.cancel().catch(() => undefined)
    const loop = await this.loop?.catch(() => undefined)
    await loop?.stop()
    clearInterval(this.ownerTimer)
    if (wasOpen && this.cmd) {
      // Our staging lists are empty after a clean stop; the owner key goes with them.
      if (loop) await this.cmd.del(this.keys.stagingOwner(this.loopId)).catch(() => undefined)
      if (requeueUnacked) await this.acks!.restoreAll()
      else this.acks!.forget()
      for (const queue of this.autoDelete) {
        if (!this.table!.fanoutBindings.has(queue)) continue
        const batch = this.cmd.multi()
        for (const [key, member] of this.table!.forgetQueue(queue)) batch.srem(key, member)
        batch.del(...this.keys.lists(queue))
        await execChecked(batch).catch(() => undefined)
      }
    }
    const hub = await this.hub?.catch(() => undefined)
    hub?.close()
    // Together: each QUIT waits for its reply, and a one-shot CLI pays every round trip.
    await Promise.all([this.subConn, this.brpopConn, this.cmd].map((conn) => conn && closeConnection(conn)))
    this.state = 'closed'
  }
}
