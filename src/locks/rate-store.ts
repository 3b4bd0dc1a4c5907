// Where the cluster-wide rate limits live: a bucket per task name (its slot
// schedule, rate-bucket.ts) and the rate `control rate_limit` set for the
// whole cluster. A Redis: conf.lock_url when it is one, else a redis://
// broker, else (on RabbitMQ, as the amqp:// lock store counts its fencing
// tokens) a Redis result backend. Opened by URL, its driver loaded on first use.
import { TsqError } from '../protocol/index.js'
import type { BucketAnswer } from './rate-bucket.js'
import type { LockSettings } from './open-store.js'

const REDIS_URL = /^rediss?:\/\//

/** The rate `control rate_limit` stored for the cluster: `text` as given, 0 µs for no limit. */
export interface StoredRate {
  text: string
  intervalUs: number
}

export interface TakeOptions {
  /** A refusal that would wait longer than this books a time to come back instead (rate-bucket.ts); absent: never. */
  deferAfterMs?: number
  /** A test's fake clock, µs; a worker leaves it to Redis's. */
  nowUs?: number
}

export interface RateStore {
  /** One take from `bucket`'s schedule; `defaultIntervalUs` applies unless a stored rate overrides it. */
  take(bucket: string, defaultIntervalUs: number, options?: TakeOptions): Promise<BucketAnswer>
  /** Sets the cluster's rate for `bucket` (every worker's next take reads it); null forgets it, back to each task's default. */
  setRate(bucket: string, rate: StoredRate | null): Promise<void>
  rateOf(bucket: string): Promise<StoredRate | null>
  close(): Promise<void>
}

/** A cluster-scoped rate limit with no Redis to keep its bucket in. */
export class RateStoreUnavailableError extends TsqError {
  override name = 'RateStoreUnavailable'
  constructor(message: string) {
    super('LOCK_STORE_UNAVAILABLE', message)
  }
}

/** The Redis URL that keeps the cluster's buckets, for these settings. */
export function rateUrlFor(s: LockSettings): string {
  if (s.lockUrl && REDIS_URL.test(s.lockUrl)) return s.lockUrl
  if (REDIS_URL.test(s.brokerUrl)) return s.brokerUrl
  if (s.resultBackend && REDIS_URL.test(s.resultBackend)) return s.resultBackend
  throw new RateStoreUnavailableError(
    `a cluster-wide rate limit needs a Redis for its bucket: set conf.lock_url to a redis:// URL (broker ${s.brokerUrl.replace(/\/\/[^@/]*@/, '//***@')})`,
  )
}

export interface RateStoreOptions {
  horizonMs?: number
  burst?: number
}

const stores = new Map<string, Promise<RateStore>>()

/** One store per URL per process, ioredis loaded on first use. */
export function openRateStore(s: LockSettings, options: RateStoreOptions = {}): Promise<RateStore> {
  let url: string
  try {
    url = rateUrlFor(s)
  } catch (error) {
    return Promise.reject(error as Error)
  }
  let store = stores.get(url)
  if (!store) {
    store = import('./rate-redis.js').then(({ RedisRateStore }) => new RedisRateStore(url, options))
    stores.set(url, store)
    store.catch(() => {
      if (stores.get(url) === store) stores.delete(url)
    })
  }
  return store
}

export async function closeRateStores(): Promise<void> {
  const all = [...stores.values()]
  stores.clear()
  await Promise.all(all.map((s) => s.then((store) => store.close()).catch(() => undefined)))
}
