// One consumer on one queue: claims messages in name order while its prefetch
// window has room, and wakes on fs.watch or the poll timer.
import type { Consumer, ConsumeOptions, Delivery, DeliveryHandler } from '../transport.js'
import type { Claim, ClaimBook } from './claims.js'
import { decodeEnvelope, expirationMs } from '../kombu-envelope.js'
import { type FileLayout, listDir } from './layout.js'
import type { QueueMeta, QueueStore } from './queues.js'
import { ReadyWatcher } from './watcher.js'

export interface ConsumerHost {
  readonly layout: FileLayout
  readonly queues: QueueStore
  readonly claims: ClaimBook
  reportError(error: unknown): void
  consumerCancelled(consumer: FileConsumer): Promise<void>
}

export class FileConsumer implements Consumer {
  private prefetch: number
  private readonly noAck: boolean
  private unacked = 0
  private cancelled = false
  private pumping = false
  private again = false
  private seq = 0
  /** Bumped on each requeue: a listing older than that misses the requeued file and must be redone. */
  private requeues = 0
  private meta: QueueMeta | undefined
  private readonly watcher: ReadyWatcher
  private readonly readyDir: string

  constructor(
    private readonly host: ConsumerHost,
    readonly queue: string,
    readonly tag: string,
    private readonly handler: DeliveryHandler,
    options: ConsumeOptions,
  ) {
    this.prefetch = options.prefetch ?? 0
    this.noAck = options.noAck ?? false
    this.readyDir = host.layout.queuePaths(queue).ready
    this.watcher = new ReadyWatcher(this.readyDir, () => this.wake())
  }

  async start(): Promise<void> {
    await this.refreshMeta()
    if (this.cancelled) return
    this.watcher.start()
    this.wake()
  }

  /** Queue arguments may be re-declared by another process; the transport calls this on its sweep tick. */
  async refreshMeta(): Promise<void> {
    this.meta = await this.host.queues.meta(this.queue)
  }

  /** Stops the timers without the transport's bookkeeping; used by cancel and close. */
  stop(): void {
    this.cancelled = true
    this.watcher.stop()
  }

  async cancel(): Promise<void> {
    if (this.cancelled) return
    this.stop()
    await this.host.consumerCancelled(this)
  }

  async setPrefetch(prefetch: number): Promise<void> {
    this.prefetch = prefetch
    this.wake()
  }

  get isCancelled(): boolean {
    return this.cancelled
  }

  private hasRoom(): boolean {
    return this.noAck || this.prefetch <= 0 || this.unacked < this.prefetch
  }

  private wake(): void {
    if (this.cancelled) return
    void this.pump()
  }

  private async pump(): Promise<void> {
    if (this.pumping) {
      this.again = true
      return
    }
    this.pumping = true
    try {
      do {
        this.again = false
        await this.drain()
      } while (this.again && !this.cancelled)
    } catch (err) {
      this.host.reportError(err)
    } finally {
      this.pumping = false
    }
  }

  private async drain(): Promise<void> {
    while (!this.cancelled && this.hasRoom()) {
      const files = (await listDir(this.readyDir)).filter((f) => f.endsWith('.msg')).sort()
      if (files.length === 0) return
      let claimed = 0
      const requeuesAtListing = this.requeues
      for (const file of files) {
        if (this.cancelled || !this.hasRoom()) return
        if (this.requeues !== requeuesAtListing) break
        const claim = await this.host.claims.claim(this.queue, file)
        if (!claim) continue
        claimed += 1
        await this.deliver(claim)
      }
      if (claimed === 0) return
    }
  }

  private async deliver(claim: Claim): Promise<void> {
    const claims = this.host.claims
    let decoded
    try {
      decoded = decodeEnvelope(claim.text)
    } catch (err) {
      // A file we cannot read back would block the queue forever; drop it and say so.
      await claims.ack(claim)
      this.host.reportError(new Error(`dropped unreadable message ${claim.file} in queue '${this.queue}'`, { cause: err }))
      return
    }
    const age = Date.now() - claim.name.publishedAt
    const ttl = this.meta?.arguments['x-message-ttl']
    const expiration = expirationMs(decoded.properties)
    if ((typeof ttl === 'number' && age > ttl) || (expiration !== undefined && age > expiration)) {
      await claims.ack(claim)
      return
    }
    if (this.noAck) await claims.ack(claim)
    else this.unacked += 1
    let settled = this.noAck
    const settle = async (step: (c: Claim) => Promise<void>): Promise<void> => {
      if (settled) return
      settled = true
      try {
        await step(claim)
      } finally {
        // Freed only once the file has moved, so the next listing sees a requeued message in its place.
        this.unacked -= 1
        this.wake()
      }
    }
    this.seq += 1
    const delivery: Delivery = {
      body: decoded.body,
      properties: decoded.properties,
      exchange: decoded.exchange,
      routingKey: decoded.routingKey,
      queue: this.queue,
      redelivered: claim.name.redelivered,
      deliveryTag: `${this.tag}.${this.seq}`,
      ack: () => settle((c) => claims.ack(c)),
      reject: ({ requeue }) =>
        settle(async (c) => {
          if (!requeue) return claims.ack(c)
          this.requeues += 1
          return claims.requeue(c)
        }),
    }
    try {
      const result = this.handler(delivery)
      if (result instanceof Promise) result.catch((err: unknown) => this.host.reportError(err))
    } catch (err) {
      this.host.reportError(err)
    }
  }
}
