// The inbox on a Redis result backend: a key per kept message
// (`tsq-failed-message-<id>`, SETEX with the kept TTL) and a sorted set of
// their ids by time, trimmed to the newest KEPT_MAX as each is added. The
// FAILURE results are found by SCAN over Celery's `celery-task-meta-*` keys.
import type { Redis } from 'ioredis'
import type { ResultMeta } from '../../protocol/index.js'
import { decodeStoredResult, type ResultCodec } from '../result-codec.js'
import { decodeKeptMessage, encodeKeptMessage, KEPT_MAX, KEPT_TTL_SECONDS, type KeptMessage } from './kept-message.js'
import { newestFirst, type FailedStore } from './store.js'

const KEY_PREFIX = 'tsq-failed-message-'
const INDEX = 'tsq-failed-messages'
const META_PREFIX = 'celery-task-meta-'
/** At most this many result keys are read for one listing: a listing is no full scan of a huge store. */
const MAX_SCANNED = 200_000

export class RedisFailedStore implements FailedStore {
  constructor(
    private readonly client: () => Promise<Redis>,
    private readonly codec: ResultCodec,
  ) {}

  async failures(limit: number): Promise<ResultMeta[]> {
    const client = await this.client()
    const out: ResultMeta[] = []
    let cursor = '0'
    let scanned = 0
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${META_PREFIX}*`, 'COUNT', 1000)
      cursor = next
      scanned += keys.length
      if (keys.length === 0) continue
      const values = await client.mgetBuffer(...keys)
      for (const value of values) {
        if (!value) continue
        try {
          const meta = decodeStoredResult(value, this.codec)
          if (meta.status === 'FAILURE') out.push(meta)
        } catch {
          // A value this reader cannot decode is no failure it can show.
        }
      }
    } while (cursor !== '0' && scanned < MAX_SCANNED)
    return newestFirst(out).slice(0, limit)
  }

  async keep(message: KeptMessage): Promise<void> {
    const client = await this.client()
    const now = Date.parse(message.failedAt) || Date.now()
    const replies = await client
      .multi()
      .setex(KEY_PREFIX + message.taskId, KEPT_TTL_SECONDS, encodeKeptMessage(message))
      .zadd(INDEX, now, message.taskId)
      .zremrangebyscore(INDEX, '-inf', now - KEPT_TTL_SECONDS * 1000)
      .expire(INDEX, KEPT_TTL_SECONDS)
      .zcard(INDEX)
      .exec()
    const failed = replies?.find(([error]) => error)
    if (failed) throw failed[0] as Error
    const count = Number(replies?.[4]?.[1] ?? 0)
    if (count > KEPT_MAX) {
      const oldest = await client.zrange(INDEX, 0, count - KEPT_MAX - 1)
      if (oldest.length) await this.drop(oldest)
    }
  }

  async kept(taskId: string): Promise<KeptMessage | null> {
    const client = await this.client()
    const text = await client.get(KEY_PREFIX + taskId)
    return text === null ? null : decodeKeptMessage(text)
  }

  async keptList(limit: number): Promise<KeptMessage[]> {
    const client = await this.client()
    const ids = await client.zrevrange(INDEX, 0, limit - 1)
    if (ids.length === 0) return []
    const texts = await client.mget(...ids.map((id) => KEY_PREFIX + id))
    const out: KeptMessage[] = []
    for (const text of texts) {
      if (text === null) continue
      try {
        out.push(decodeKeptMessage(text))
      } catch {
        // Not one of ours: left out.
      }
    }
    return out
  }

  async drop(taskIds: readonly string[]): Promise<void> {
    if (taskIds.length === 0) return
    const client = await this.client()
    await client
      .multi()
      .del(...taskIds.map((id) => KEY_PREFIX + id))
      .zrem(INDEX, ...taskIds)
      .exec()
  }
}
