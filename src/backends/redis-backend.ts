// Celery's Redis result backend (spec §2.3): `celery-task-meta-<id>` written
// with SETEX and PUBLISHed on a channel of the same name.
import { Redis } from 'ioredis'
// DEBUG=ioredis:* lines with their passwords masked.
import '../transport/redis/index.js'
import { decodeBody, dumps, serializerSpec, type ResultMeta } from '../protocol/index.js'
import {
  BrokerConnectionError,
  explainRedisConnectFailure,
  isRedisConnectionError,
  maskUrl,
  livenessClientOptions,
  redisUrlClientOptions,
  sayRedisOutOfMemory,
  watchLiveness,
  type RedisClientOptions,
  type RedisLiveness,
  type SentinelSettings,
  type SslSettings,
} from '../transport/index.js'
import { READY, ResultTimeoutError, type ResultBackend } from './backend.js'
import { RedisFailedStore, type FailedStore } from './failed/index.js'
import { JSON_RESULTS, decodeStoredResult, encodeStoredResult, type ResultCodec } from './result-codec.js'

const KEY_PREFIX = 'celery-task-meta-'
const GROUP_PREFIX = 'celery-taskset-meta-'
/** `result_expires`, one day. */
const RESULT_TTL_SECONDS = 86_400

/**
 * Celery's RedisBackend.retry_policy (max_retries 20, interval_start 0,
 * interval_step 1, interval_max 1): a write that meets a connection error
 * is tried again. Used through Sentinels, where a failover makes the write
 * land on a demoted master (READONLY) until the client has moved: the
 * worker acks the task after this, so a result dropped here would be lost.
 */
const SENTINEL_RETRIES = 20

async function retried<T>(op: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await op()
    } catch (error) {
      if (attempt >= SENTINEL_RETRIES || !isRedisConnectionError(error)) throw error
      await new Promise((r) => setTimeout(r, Math.min(attempt, 1) * 1000))
    }
  }
}

export class RedisResultBackend implements ResultBackend {
  readonly displayUrl: string
  private readonly client: Redis

  /**
   * `ssl`: Celery's redis_backend_use_ssl; a `rediss://` URL's ssl_* parameters win.
   * `sentinel`: result_backend_transport_options, for a sentinel:// URL.
   */
  constructor(
    private readonly url: string,
    readonly codec: ResultCodec = JSON_RESULTS,
    ssl?: SslSettings | boolean | null,
    sentinel?: SentinelSettings,
    liveness: RedisLiveness = {},
    onConnection?: (event: 'lost' | 'restored', line: string) => void,
  ) {
    this.displayUrl = maskUrl(url)
    this.clientOptions = redisUrlClientOptions(url, ssl, { settings: sentinel, optionsName: 'result_backend_transport_options' })
    const write = this.clientOptions.sentinels ? retried : <T>(op: () => Promise<T>) => op()
    // A store refused under maxmemory says so (its MULTI fails as EXECABORT otherwise).
    this.write = (op) =>
      write(op).catch((error: unknown) => Promise.reject(sayRedisOutOfMemory(error, `result backend ${this.displayUrl}`)))
    // Celery's redis_socket_timeout default (120 s) when unset; the health check (25 s unless set) notices a silent path sooner.
    this.liveness = { ...liveness, socketTimeout: liveness.socketTimeout === undefined ? 120 : liveness.socketTimeout }
    const connectTimeout = this.liveness.socketConnectTimeout ? Math.round(this.liveness.socketConnectTimeout * 1000) : 5000
    this.connectTimeoutMs = connectTimeout
    this.client = new Redis({
      ...this.clientOptions,
      ...livenessClientOptions(this.liveness),
      connectTimeout,
      lazyConnect: true,
      maxRetriesPerRequest: 2,
      connectionName: `tsq-result-${process.pid}`,
    })
    watchLiveness(this.client, this.liveness, connectTimeout)
    this.client.on('error', (error: Error) => {
      this.lastError = error
    })
    if (onConnection) {
      // Once per loss: the drop with its reason, then the reconnect (attempts in between are ioredis's).
      let ready = false
      let down = false
      this.client.on('ready', () => {
        if (down) onConnection('restored', `Result backend: connected to ${this.displayUrl} again`)
        ready = true
        down = false
      })
      this.client.on('close', () => {
        if (!ready || down || this.closed) return
        down = true
        onConnection(
          'lost',
          `Result backend: connection to ${this.displayUrl} lost: ${this.lastError?.message ?? 'closed'}. Trying to re-establish the connection...`,
        )
      })
    }
    this.client.on('sentinelError', (error: Error) => {
      this.lastSentinelError = error
    })
  }

  private readonly liveness: RedisLiveness
  private closed = false
  private readonly connectTimeoutMs: number
  private lastError: Error | undefined
  private lastSentinelError: Error | undefined
  private readonly clientOptions: RedisClientOptions
  private readonly write: <T>(op: () => Promise<T>) => Promise<T>

  private async ready(): Promise<void> {
    if (this.client.status !== 'wait') return
    try {
      await this.client.connect()
    } catch (error) {
      const cause = this.lastError ?? error
      throw new BrokerConnectionError(
        `cannot connect to result backend ${this.displayUrl}: ${await explainRedisConnectFailure(cause, this.clientOptions, this.lastSentinelError)}`,
        { cause },
      )
    }
  }

  async get(taskId: string): Promise<ResultMeta | null> {
    await this.ready()
    const stored = await this.client.getBuffer(KEY_PREFIX + taskId)
    return stored === null ? null : decodeStoredResult(stored, this.codec)
  }

  async forget(taskId: string): Promise<void> {
    await this.ready()
    await this.client.del(KEY_PREFIX + taskId)
  }

  async waitReady(taskId: string, timeoutMs?: number): Promise<ResultMeta> {
    await this.ready()
    const channel = KEY_PREFIX + taskId
    const subscriber = this.client.duplicate({ connectionName: `tsq-result-sub-${process.pid}` })
    watchLiveness(subscriber, this.liveness, this.connectTimeoutMs)
    try {
      return await new Promise<ResultMeta>((resolve, reject) => {
        let timer: NodeJS.Timeout | undefined
        const settle = (meta: ResultMeta) => {
          if (timer) clearTimeout(timer)
          resolve(meta)
        }
        subscriber.on('messageBuffer', (_channel: Buffer, stored: Buffer) => {
          try {
            const meta = decodeStoredResult(stored, this.codec)
            if (READY.has(meta.status)) settle(meta)
          } catch {
            // An unreadable publish is ignored; the stored key is read below.
          }
        })
        if (timeoutMs !== undefined) timer = setTimeout(() => reject(new ResultTimeoutError(taskId, timeoutMs / 1000)), timeoutMs)
        // Resubscribed after a drop: a result published while the path was down is read from its key.
        let readies = 0
        subscriber.on('ready', () => {
          readies += 1
          if (readies > 1)
            this.get(taskId).then(
              (meta) => meta && READY.has(meta.status) && settle(meta),
              () => undefined,
            )
        })
        // Subscribe first, then read the key, so a result stored in between is not missed.
        subscriber
          .subscribe(channel)
          .then(() => this.get(taskId))
          .then((meta) => {
            if (meta && READY.has(meta.status)) settle(meta)
          })
          .catch(reject)
      })
    } finally {
      subscriber.disconnect()
    }
  }

  async store(taskId: string, metaJson: string | Uint8Array, status: string): Promise<void> {
    await this.ready()
    const key = KEY_PREFIX + taskId
    const existing = await this.client.getBuffer(key)
    if (existing !== null && status !== 'SUCCESS') {
      try {
        if (decodeStoredResult(existing, this.codec).status === 'SUCCESS') return
      } catch {
        // Overwrite what cannot be read.
      }
    }
    const { body } = encodeStoredResult(metaJson, this.codec)
    await this.write(() => execOrThrow(this.client.multi().setex(key, RESULT_TTL_SECONDS, body).publish(key, body)))
  }

  async setChordSize(groupId: string, size: number): Promise<void> {
    await this.ready()
    const key = `${GROUP_PREFIX}${groupId}.s`
    // Celery's backend.set(): SETEX and a PUBLISH of the same value.
    await this.write(() => execOrThrow(this.client.multi().setex(key, RESULT_TTL_SECONDS, String(size)).publish(key, String(size))))
  }

  async addToChord(groupId: string): Promise<void> {
    await this.ready()
    const key = `${GROUP_PREFIX}${groupId}.t`
    await this.write(() => execOrThrow(this.client.multi().incr(key).expire(key, RESULT_TTL_SECONDS)))
  }

  async chordPartReturn(groupId: string, groupIndex: number | null, part: string): Promise<string[] | null> {
    await this.ready()
    const joined = `${GROUP_PREFIX}${groupId}.j`
    const added = `${GROUP_PREFIX}${groupId}.t`
    const size = `${GROUP_PREFIX}${groupId}.s`
    // One MULTI, as redis-py's default pipeline: of the parts racing to finish,
    // exactly one sees the full count.
    const replies = await this.client
      .multi()
      .zadd(joined, groupIndex ?? '+inf', part)
      .zcount(joined, '-inf', '+inf')
      .get(added)
      .get(size)
      .expire(joined, RESULT_TTL_SECONDS)
      .expire(added, RESULT_TTL_SECONDS)
      .expire(size, RESULT_TTL_SECONDS)
      .exec()
    if (!replies) throw new Error(`chord ${groupId}: the transaction was discarded`)
    const failed = replies.find(([error]) => error)
    if (failed) throw failed[0] as Error
    const ready = Number(replies[1]![1])
    const [extra, chordSize] = [replies[2]![1] as string | null, replies[3]![1] as string | null]
    // No size yet: the client has not finished sending the header (Celery waits the same way).
    if (!chordSize) return null
    if (ready !== Number(chordSize) + Number(extra ?? 0)) return null
    try {
      return await this.client.zrange(joined, 0, -1)
    } finally {
      await this.client.del(joined, added, size)
    }
  }

  async saveGroupResult(groupId: string, tuple: unknown[]): Promise<void> {
    await this.ready()
    const key = GROUP_PREFIX + groupId
    // Celery's _save_group: {"result": as_tuple()} in the result serializer, SETEX and PUBLISH as its set().
    const { body } = encodeStoredResult(dumps({ result: tuple }), this.codec)
    await this.write(() => execOrThrow(this.client.multi().setex(key, RESULT_TTL_SECONDS, body).publish(key, body)))
  }

  async restoreGroupResult(groupId: string): Promise<unknown> {
    await this.ready()
    const stored = await this.client.getBuffer(GROUP_PREFIX + groupId)
    if (stored === null) return null
    const spec = serializerSpec(this.codec.serializer)
    const value = decodeBody(stored, spec.contentType, spec.contentEncoding, { accept: this.codec.accept }, 'saved group')
    return value !== null && typeof value === 'object' && 'result' in value ? (value as { result: unknown }).result : null
  }

  failedStore(): FailedStore {
    this.failed ??= new RedisFailedStore(async () => {
      await this.ready()
      return this.client
    }, this.codec)
    return this.failed
  }

  private failed: FailedStore | undefined

  async close(): Promise<void> {
    this.closed = true
    this.client.disconnect()
  }
}

/** EXEC, failing on the first command error (ioredis reports those per command, not by rejecting). */
async function execOrThrow(multi: ReturnType<Redis['multi']>): Promise<void> {
  const replies = await multi.exec()
  if (!replies) throw new Error('the transaction was discarded')
  const failed = replies.find(([error]) => error)
  if (failed) throw failed[0] as Error
}
