// Picks and opens the store from beat's and `tsq schedule`'s shared flags.
import { DjangoStore, type StoreLog } from './django-store.js'
import { DEFAULT_SCHEDULE_FILE, FileStore } from './file-store.js'
import { DEFAULT_KEY_PREFIX, RedisStore } from './redis-store.js'
import type { BeatStore } from './store.js'
import type { RedisLiveness, SentinelSettings, SslSettings } from '../transport/index.js'
import { codedError } from '../protocol/index.js'

export type StoreKind = 'file' | 'redis' | 'django'

/** What `-S/--scheduler` accepts: Celery's spelling of django-celery-beat's scheduler is tsq's `django`. */
export const SCHEDULER_CHOICES = [
  'file',
  'redis',
  'django',
  'django_celery_beat.schedulers:DatabaseScheduler',
  'django_celery_beat.schedulers.DatabaseScheduler',
] as const

export function storeKindOf(scheduler: string): StoreKind {
  if (scheduler === 'file' || scheduler === 'redis' || scheduler === 'django') return scheduler
  if (/^django_celery_beat\.schedulers[:.]DatabaseScheduler$/.test(scheduler)) return 'django'
  throw new StoreConfigError(
    `unknown scheduler ${JSON.stringify(scheduler)} (file, redis, or django / django_celery_beat.schedulers:DatabaseScheduler)`,
  )
}

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
  /** broker_transport_options' socket_timeout, socket_connect_timeout, socket_keepalive, health_check_interval, for a Redis store. */
  liveness?: RedisLiveness
  /** The Django project's database for --scheduler django (--database-url, database_url, DATABASE_URL). */
  databaseUrl?: string
  /** Where a store reports a row it cannot run, and a schedule change it took up. */
  log?: StoreLog
}

export class StoreConfigError extends codedError('USAGE') {}

export function redisUrlFor(o: StoreOptions): string {
  if (o.redisUrl) return o.redisUrl
  if (/^(rediss?|sentinel):\/\//i.test(o.brokerUrl)) return o.brokerUrl
  throw new StoreConfigError('--scheduler redis needs --redis-url (the broker is not Redis)')
}

export function databaseUrlFor(o: StoreOptions): string {
  if (o.databaseUrl) return o.databaseUrl
  throw new StoreConfigError(
    '--scheduler django needs the Django database: --database-url, the database_url setting, or DATABASE_URL (e.g. postgresql://user@host/db)',
  )
}

export async function openStore(o: StoreOptions): Promise<BeatStore> {
  if (o.scheduler === 'django') return DjangoStore.open({ url: databaseUrlFor(o), tz: o.tz, log: o.log })
  if (o.scheduler === 'redis')
    return RedisStore.open({
      url: redisUrlFor(o),
      ssl: o.ssl,
      sentinel: o.sentinel,
      liveness: o.liveness,
      keyPrefix: o.keyPrefix ?? DEFAULT_KEY_PREFIX,
      tz: o.tz,
    })
  return new FileStore(o.schedulePath ?? DEFAULT_SCHEDULE_FILE, o.tz)
}
