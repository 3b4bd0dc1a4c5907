// Celery's Redis result backend (spec §2.3): `celery-task-meta-<id>` written
// with SETEX and PUBLISHed on a channel of the same name.
import { Redis } from 'ioredis'
import { decodeResultMeta, type ResultMeta } from '../../protocol/index.js'
import { maskUrl } from '../../transport/index.js'
import { READY, ResultTimeoutError, type ResultBackend } from './backend.js'

const KEY_PREFIX = 'celery-task-meta-'
/** `result_expires`, one day. */
const RESULT_TTL_SECONDS = 86_400

export class RedisResultBackend implements ResultBackend {
  readonly displayUrl: string
  private readonly client: Redis

  constructor(private readonly url: string) {
    this.displayUrl = maskUrl(url)
    this.client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2, connectionName: `tsq-result-${process.pid}` })
  }

  private async ready(): Promise<void> {
    if (this.client.status === 'wait') await this.client.connect()
  }

  async get(taskId: string): Promise<ResultMeta | null> {
    await this.ready()
    const text = await this.client.get(KEY_PREFIX + taskId)
    return text === null ? null : decodeResultMeta(text)
  }

  async waitReady(taskId: string, timeoutMs?: number): Promise<ResultMeta> {
    await this.ready()
    const channel = KEY_PREFIX + taskId
    const subscriber = this.client.duplicate({ connectionName: `tsq-result-sub-${process.pid}` })
    try {
      return await new Promise<ResultMeta>((resolve, reject) => {
        let timer: NodeJS.Timeout | undefined
        const settle = (meta: ResultMeta) => {
          if (timer) clearTimeout(timer)
          resolve(meta)
        }
        subscriber.on('message', (_channel: string, text: string) => {
          try {
            const meta = decodeResultMeta(text)
            if (READY.has(meta.status)) settle(meta)
          } catch {
            // An unreadable publish is ignored; the stored key is read below.
          }
        })
        if (timeoutMs !== undefined) timer = setTimeout(() => reject(new ResultTimeoutError(taskId, timeoutMs / 1000)), timeoutMs)
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

  async store(taskId: string, metaJson: string, status: string): Promise<void> {
    await this.ready()
    const key = KEY_PREFIX + taskId
    const existing = await this.client.get(key)
    if (existing !== null && status !== 'SUCCESS') {
      try {
        if (decodeResultMeta(existing).status === 'SUCCESS') return
      } catch {
        // Overwrite what cannot be read.
      }
    }
    await this.client.multi().setex(key, RESULT_TTL_SECONDS, metaJson).publish(key, metaJson).exec()
  }

  async close(): Promise<void> {
    this.client.disconnect()
  }
}
