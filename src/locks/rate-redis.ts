// The cluster's rate buckets in Redis. Keys (docs/rate-limits.md):
//   tsq:rate:<task>      hash: the rate `control rate_limit` set for the cluster
//                        (rate: as given, interval_us: µs between slots, 0 = none)
//   tsq:rate-tat:<task>  the time the next slot is free, µs on Redis's clock
//   tsq:rate-deferred:<task>  the next time a deferred message may be booked to come back
// A take is one script (rate-bucket.ts), so workers never race on a slot.
import { Redis } from 'ioredis'
// DEBUG=ioredis:* lines with their passwords masked.
import '../transport/redis/index.js'
import { redisUrlClientOptions } from '../transport/index.js'
import { answerOf, DEFAULT_BURST, DEFAULT_HORIZON_MS, TAKE_SLOT_LUA, type BucketAnswer } from './rate-bucket.js'
import type { RateStore, RateStoreOptions, StoredRate, TakeOptions } from './rate-store.js'

export const RATE_PREFIX = 'tsq:rate:'
export const TAT_PREFIX = 'tsq:rate-tat:'
export const DEFERRED_PREFIX = 'tsq:rate-deferred:'

interface RateCommands {
  tsqRateTake(
    override: string,
    tat: string,
    deferTat: string,
    intervalUs: number,
    burst: number,
    horizonUs: number,
    nowUs: string,
    deferAfterUs: number,
  ): Promise<[number, number, number]>
}

const noop = (): void => undefined

export class RedisRateStore implements RateStore {
  private readonly redis: Redis & RateCommands
  private readonly burst: number
  private readonly horizonUs: number

  constructor(
    readonly url: string,
    options: RateStoreOptions = {},
  ) {
    const redis = new Redis({ ...redisUrlClientOptions(url), lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 2000 })
    redis.on('error', noop)
    redis.defineCommand('tsqRateTake', { numberOfKeys: 3, lua: TAKE_SLOT_LUA })
    this.redis = redis as Redis & RateCommands
    this.burst = options.burst ?? DEFAULT_BURST
    this.horizonUs = (options.horizonMs ?? DEFAULT_HORIZON_MS) * 1000
  }

  async take(bucket: string, defaultIntervalUs: number, options: TakeOptions = {}): Promise<BucketAnswer> {
    const reply = await this.redis.tsqRateTake(
      RATE_PREFIX + bucket,
      TAT_PREFIX + bucket,
      DEFERRED_PREFIX + bucket,
      Math.round(defaultIntervalUs),
      this.burst,
      this.horizonUs,
      options.nowUs === undefined ? '' : String(Math.round(options.nowUs)),
      Math.round((options.deferAfterMs ?? 0) * 1000),
    )
    return answerOf(reply)
  }

  async setRate(bucket: string, rate: StoredRate | null): Promise<void> {
    if (rate === null) await this.redis.del(RATE_PREFIX + bucket)
    else await this.redis.hset(RATE_PREFIX + bucket, 'rate', rate.text, 'interval_us', String(Math.round(rate.intervalUs)))
  }

  async rateOf(bucket: string): Promise<StoredRate | null> {
    const [text, interval] = await this.redis.hmget(RATE_PREFIX + bucket, 'rate', 'interval_us')
    return interval === null || interval === undefined ? null : { text: text ?? '', intervalUs: Number(interval) }
  }

  async close(): Promise<void> {
    this.redis.disconnect()
  }
}
