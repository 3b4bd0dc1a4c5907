// Celery's rpc:// backend (spec §2.4): results travel as messages to the
// client's own reply queue (its oid), matched by correlation_id.
import type { ResultMeta } from '../protocol/index.js'
import type { Consumer, Transport } from '../transport/index.js'
import { READY, ResultTimeoutError, type ResultBackend, type StoreTarget } from './backend.js'
import { JSON_RESULTS, decodeStoredResult, encodeStoredResult, type ResultCodec } from './result-codec.js'

/** `result_expires` in ms: the reply queue's x-expires. */
const REPLY_QUEUE_EXPIRES_MS = 86_400_000

export class RpcResultBackend implements ResultBackend {
  readonly displayUrl = 'rpc://'
  readonly shortForm = true
  private readonly latest = new Map<string, ResultMeta>()
  private readonly waiters = new Map<string, Set<(meta: ResultMeta) => void>>()
  private consumer: Consumer | undefined

  /** replyTo is undefined on the worker side, which only publishes. */
  constructor(
    private readonly transport: Transport,
    private readonly replyTo?: string,
    readonly codec: ResultCodec = JSON_RESULTS,
  ) {}

  async start(): Promise<void> {
    if (!this.replyTo || this.consumer) return
    await this.transport.declareQueue({
      name: this.replyTo,
      durable: false,
      exclusive: false,
      autoDelete: true,
      arguments: { 'x-expires': REPLY_QUEUE_EXPIRES_MS },
    })
    this.consumer = await this.transport.consume(
      this.replyTo,
      (delivery) => {
        let meta: ResultMeta
        try {
          // Each reply names its serializer; result_accept_content decides.
          meta = decodeStoredResult(delivery.body, this.codec, delivery.properties.contentType, delivery.properties.contentEncoding)
        } catch {
          return
        }
        const id = delivery.properties.correlationId ?? meta.task_id
        if (!id) return
        this.latest.set(id, meta)
        if (READY.has(meta.status)) for (const wake of this.waiters.get(id) ?? []) wake(meta)
      },
      { noAck: true },
    )
  }

  /** Celery's rpc forget drops the client's copy: the result lived only in its reply queue. */
  async forget(taskId: string): Promise<void> {
    this.latest.delete(taskId)
  }

  async get(taskId: string): Promise<ResultMeta | null> {
    return this.latest.get(taskId) ?? null
  }

  waitReady(taskId: string, timeoutMs?: number): Promise<ResultMeta> {
    const known = this.latest.get(taskId)
    if (known && READY.has(known.status)) return Promise.resolve(known)
    return new Promise((resolve, reject) => {
      let set = this.waiters.get(taskId)
      if (!set) this.waiters.set(taskId, (set = new Set()))
      let timer: NodeJS.Timeout | undefined
      const wake = (meta: ResultMeta) => {
        if (timer) clearTimeout(timer)
        set!.delete(wake)
        resolve(meta)
      }
      set.add(wake)
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          set!.delete(wake)
          reject(new ResultTimeoutError(taskId, timeoutMs / 1000))
        }, timeoutMs)
      }
    })
  }

  async store(taskId: string, metaJson: string | Uint8Array, _status: string, target?: StoreTarget): Promise<void> {
    // No reply_to means the sender did not want rpc results (Celery sends nothing).
    if (!target?.replyTo) return
    const { body, contentType, contentEncoding } = encodeStoredResult(metaJson, this.codec)
    await this.transport.publish('', target.replyTo, {
      body,
      properties: {
        contentType,
        contentEncoding,
        headers: {},
        deliveryMode: 1,
        priority: 0,
        correlationId: target.correlationId ?? taskId,
      },
    })
  }

  async close(): Promise<void> {
    await this.consumer?.cancel().catch(() => undefined)
  }
}
