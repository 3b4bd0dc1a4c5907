// Picks and opens the store from beat's and `tsq schedule`'s shared flags.
import { DEFAULT_SCHEDULE_FILE, FileStore } from './file-store.js'
import { DEFAULT_KEY_PREFIX, RedisStore } from './redis-store.js'
import type { BeatStore } from './store.js'
import type { SentinelSettings, SslSettings } from '../transport/index.js'

export type StoreKind = 'file' | 'redis'

export interface StoreOptions {
  scheduler: StoreKind
  /** `-s/--schedule`, the file store's path. */
  schedulePath?: string
  redisUrl?: string
  brokerUrl: string
  keyPrefix?: string
  tz: string
  /** The app's redbeat_redis_use_ssl, else its broker_use_ssl (RedBeat's order). */
  ssl?: SslSettings | boolean | null
  /** broker_transport_options' master_name and sentinel_kwargs, for a sentinel:// store. */
  sentinel?: SentinelSettings
}

export class StoreConfigError extends Error {
  readonly code = 'USAGE'
}

export function redisUrlFor(o: StoreOptions): string {
  if (o.redisUrl) return o.redisUrl
  if (/^(rediss?|sentinel):\/\//i.test(o.brokerUrl)) return o.brokerUrl
  throw new StoreConfigError('--scheduler redis needs --redis-url (the broker is not Redis)')
}

export async function openStore(o: StoreOptions): Promise<BeatStore> {
  if (o.scheduler === 'redis') return RedisStore.open({ url: redisUrlFor(o), ssl: o.ssl, sentinel: o.sentinel, keyPrefix: o.keyPrefix ?? DEFAULT_KEY_PREFIX, tz: o.tz })
  return new FileStore(o.schedulePath ?? DEFAULT_SCHEDULE_FILE, o.tz)
}
