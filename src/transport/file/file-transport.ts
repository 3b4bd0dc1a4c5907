// tsq's embedded broker: a folder shared by the processes of one machine, no
// server. Publish and claim are atomic renames; a consumer's claims live under
// its owner's name, and any process hands a dead owner's claims back. Layout in
// layout.ts; crash-recovery rules in owners.ts and sweeper.ts.
import { writeFile, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { PRIVATE_FILE_MODE, UnsafeStoreError } from '../private-files.js'
import { BrokerConnectionError, BrokerRequestError, TransportClosedError } from '../errors.js'
import type {
  CloseOptions,
  ConsumeOptions,
  Consumer,
  DeliveryHandler,
  ExchangeSpec,
  OutgoingMessage,
  Parking,
  QueueSpec,
  LocateResult,
  QueueStatus,
  Transport,
  TransportCapabilities,
} from '../transport.js'
import { TransportEmitter } from '../transport-emitter.js'
import { ClaimBook } from './claims.js'
import { encodeEnvelope } from '../kombu-envelope.js'
import { type ConsumerHost, FileConsumer } from './file-consumer.js'
import { FileLayout, ignoreMissing, listDir } from './layout.js'
import { escapeName, newMessageBase } from './names.js'
import { OwnerLease, OwnerLiveness } from './owners.js'
import { QueueStore } from './queues.js'
import { FileParkingStore } from './parking.js'
import { ExchangeTable } from './routing.js'
import { CONSUMER_SEP, consumersOf, Sweeper } from './sweeper.js'
import { VirtualExchanges } from '../virtual/exchanges.js'
import { VirtualParking } from '../virtual/parking.js'
import { AMQP_TOPIC } from '../virtual/topic.js'
import { locateInFiles } from './locate.js'

/** Heartbeat period; also how often consumed queues are marked used (x-expires). */
const HEARTBEAT_MS = 1000
/** Full sweeps run every this many heartbeats, while this transport has consumers. */
const SWEEP_EVERY = 2

type State = 'new' | 'open' | 'closed'

export class FileTransport extends TransportEmitter implements Transport, ConsumerHost {
  readonly kind = 'file' as const
  readonly displayUrl: string
  readonly capabilities: TransportCapabilities = {
    // Every queue honours priority (0..255, higher first), with or without x-max-priority.
    priority: 'higher-first',
    queueTtl: true,
    fanoutNeedsLiveSubscriber: false,
    exclusiveQueues: false,
    autoDeleteOnCancel: false,
  }

  readonly layout: FileLayout
  readonly queues: QueueStore
  readonly claims: ClaimBook
  private readonly exchanges: ExchangeTable
  /** Exchanges as kombu's virtual transport emulates them (virtual/), over the table on disk. */
  private readonly routing: VirtualExchanges
  private readonly lease: OwnerLease
  private readonly sweeper: Sweeper
  private readonly consumers = new Set<FileConsumer>()
  private state: State = 'new'
  private closing: Promise<void> | undefined
  private timer: NodeJS.Timeout | undefined
  private ticks = 0
  private sweeping = false
  private consumerSeq = 0
  /** Parking lots (parking.ts): the events bus's retries and archives. */
  readonly parking: Parking

  constructor(readonly dir: string) {
    super()
    this.displayUrl = `file://${dir}`
    this.layout = new FileLayout(dir)
    this.exchanges = new ExchangeTable(this.layout)
    this.queues = new QueueStore(this.layout, this.exchanges)
    const exchanges = this.exchanges
    this.routing = new VirtualExchanges(
      {
        typeOf: (exchange) => exchanges.typeOf(exchange),
        table: (exchange) => exchanges.table(exchange),
        storeBinding: (exchange, type, row) => exchanges.storeBinding(exchange, type, row),
        // One file, renamed into each queue; a publish to the default exchange makes its queue if need be.
        put: async (queues, exchange, routingKey, message) => {
          await this.queues.put(
            queues,
            newMessageBase(message.properties.priority),
            encodeEnvelope(exchange, routingKey, message),
            exchange === '',
          )
        },
      },
      AMQP_TOPIC,
    )
    this.lease = new OwnerLease(this.layout)
    this.claims = new ClaimBook(this.layout, this.lease.id)
    this.sweeper = new Sweeper(this.layout, this.queues, this.lease.id)
    this.parking = new VirtualParking(new FileParkingStore(this.layout), () => this.assertOpen())
  }

  /** This transport's owner id: the name of its claim folders (pid first). */
  get ownerId(): string {
    return this.lease.id
  }

  async connect(): Promise<void> {
    if (this.state === 'open') return
    if (this.state === 'closed') throw new TransportClosedError('file transport was closed; create a new one')
    try {
      await this.layout.ensureTree()
      await this.lease.acquire()
    } catch (err) {
      // EACCES, ENOSPC, EROFS...: the operator's fix is the folder, so say which one.
      const reason = err instanceof Error ? err.message : String(err)
      // A folder refused for safety will not become safe by waiting: not retried.
      if (err instanceof UnsafeStoreError) throw new BrokerRequestError(err.code, reason, { cause: err })
      throw new BrokerConnectionError(`cannot open the file broker at ${this.dir}: ${reason}`, { cause: err })
    }
    this.state = 'open'
    // Ref'd, like an open AMQP socket: a connected transport keeps its process alive until closed.
    this.timer = setInterval(() => void this.tick(), HEARTBEAT_MS)
  }

  private assertOpen(): void {
    if (this.state === 'new') throw new TransportClosedError(`file transport ${this.displayUrl} is not connected; call connect() first`)
    if (this.state === 'closed') throw new TransportClosedError(`file transport ${this.displayUrl} is closed`)
  }

  private async tick(): Promise<void> {
    if (this.state !== 'open') return
    try {
      await this.lease.heartbeat()
      const consumed = new Set([...this.consumers].map((c) => c.queue))
      for (const queue of consumed) await this.queues.touch(queue)
      this.ticks = (this.ticks + 1) % SWEEP_EVERY
      if (this.ticks === 0 && this.consumers.size > 0 && !this.sweeping) {
        this.sweeping = true
        try {
          await this.sweeper.sweepAll()
          for (const c of this.consumers) await c.refreshMeta()
        } finally {
          this.sweeping = false
        }
      }
    } catch (err) {
      this.reportError(err)
    }
  }

  reportError(error: unknown): void {
    const err = error instanceof Error ? error : new Error(String(error))
    if (this.listenerCount('error') > 0) this.emit('error', err)
    else process.emitWarning(err)
  }

  async declareExchange(spec: ExchangeSpec): Promise<void> {
    this.assertOpen()
    await this.exchanges.declare(spec)
  }

  async declareQueue(spec: QueueSpec): Promise<{ messageCount: number }> {
    this.assertOpen()
    if (spec.name === '') throw new BrokerRequestError('PRECONDITION_FAILED', 'the file broker needs a queue name')
    const escaped = escapeName(spec.name)
    const messageCount = await this.queues.declare(spec)
    await this.sweeper.forgetDeadConsumers(escaped)
    return { messageCount }
  }

  async bindQueue(queue: string, exchange: string, routingKey: string): Promise<void> {
    this.assertOpen()
    if (!(await this.queues.exists(queue))) throw new BrokerRequestError('NOT_FOUND', `no queue '${queue}'`)
    await this.routing.bind(queue, exchange, routingKey)
  }

  async unbindQueue(queue: string, exchange: string, routingKey: string): Promise<void> {
    this.assertOpen()
    await this.exchanges.unbind(queue, exchange, routingKey)
  }

  async deleteQueue(queue: string): Promise<void> {
    this.assertOpen()
    // AMQP cancels the consumers of a deleted queue.
    for (const c of [...this.consumers]) {
      if (c.queue !== queue) continue
      c.stop()
      this.consumers.delete(c)
    }
    await this.queues.delete(queue)
  }

  /** Reads ready/ and claimed/ in place (locate.ts); nothing moves. */
  locateMessage(taskId: string, queues: readonly string[], options: { limit?: number } = {}): Promise<LocateResult> {
    this.assertOpen()
    return locateInFiles(this.layout, taskId, queues, options.limit)
  }

  async checkQueue(queue: string): Promise<QueueStatus | null> {
    this.assertOpen()
    if (!(await this.queues.exists(queue))) return null
    return { messageCount: await this.queues.count(queue), consumerCount: (await listDir(this.layout.queuePaths(queue).consumers)).length }
  }

  async publish(exchange: string, routingKey: string, message: OutgoingMessage): Promise<void> {
    this.assertOpen()
    await this.routing.publish(exchange, routingKey, message)
  }

  async consume(queue: string, handler: DeliveryHandler, options: ConsumeOptions = {}): Promise<Consumer> {
    this.assertOpen()
    if (!(await this.queues.exists(queue))) throw new BrokerRequestError('NOT_FOUND', `no queue '${queue}'`)
    this.consumerSeq += 1
    const tag = `${this.lease.id}.c${this.consumerSeq}`
    await writeFile(this.consumerFile(queue, tag), '', { mode: PRIVATE_FILE_MODE })
    await this.queues.touch(queue)
    await this.sweeper.sweepQueue(escapeName(queue))
    const consumer = new FileConsumer(this, queue, tag, handler, options)
    this.consumers.add(consumer)
    await consumer.start()
    // A close() that ran during the awaits above missed this consumer: its watcher would
    // keep claiming messages (and the process alive) after the transport is closed.
    if (this.state !== 'open') {
      await consumer.cancel().catch(() => undefined)
      throw new TransportClosedError(`file transport ${this.displayUrl} was closed while a consumer of '${queue}' was starting`)
    }
    return consumer
  }

  private consumerFile(queue: string, tag: string): string {
    return join(this.layout.queuePaths(queue).consumers, `${this.lease.id}${CONSUMER_SEP}${escapeName(tag)}`)
  }

  async consumerCancelled(consumer: FileConsumer): Promise<void> {
    this.consumers.delete(consumer)
    await ignoreMissing(unlink(this.consumerFile(consumer.queue, consumer.tag)))
    await this.autoDelete(consumer.queue)
  }

  /** AMQP auto-delete: the queue goes when its last consumer (in any process) goes. */
  private async autoDelete(queue: string): Promise<void> {
    const meta = await this.queues.meta(queue)
    if (!meta?.autoDelete) return
    const { liveConsumers } = await consumersOf(this.layout.queuePaths(queue).consumers, new OwnerLiveness(this.layout, this.lease.id))
    if (liveConsumers === 0) await this.queues.delete(queue)
  }

  async purge(queue: string): Promise<number> {
    this.assertOpen()
    return this.queues.purge(queue)
  }

  close(options: CloseOptions = {}): Promise<void> {
    this.closing ??= this.shutdown(options.requeueUnacked ?? true)
    return this.closing
  }

  private async shutdown(requeueUnacked: boolean): Promise<void> {
    const wasOpen = this.state === 'open'
    this.state = 'closed'
    if (this.timer) clearInterval(this.timer)
    this.timer = undefined
    if (!wasOpen) return
    const errors: unknown[] = []
    for (const consumer of [...this.consumers]) {
      consumer.stop()
      try {
        await this.consumerCancelled(consumer)
      } catch (err) {
        errors.push(err)
      }
    }
    // Without requeue the claims stay put; once our owner file is gone, the next
    // sweep by any process hands them back (Redis's visibility timeout, shortened).
    if (requeueUnacked) {
      try {
        await this.claims.returnAll()
      } catch (err) {
        errors.push(err)
      }
    }
    await this.lease.release()
    if (errors.length > 0) throw new AggregateError(errors, 'file transport closed with errors')
  }
}
