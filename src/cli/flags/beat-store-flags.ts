// The schedule store's flags, shared by `tsq beat`, `tsq worker -B` and every
// `tsq schedule` command, and the store they open.
import { Flags } from '@oclif/core'
import { loadConfig } from '../../config/index.js'
import { openStore, SCHEDULER_CHOICES, storeKindOf, type BeatStore, type StoreOptions } from '../../beat/index.js'
import { clientConfig, type GlobalFlagValues } from '../client-config.js'
import { choiceFlag } from './oclif-flags.js'

/** The store flags beat and every `tsq schedule` command share. */
export const storeFlags = {
  scheduler: choiceFlag({
    char: 'S',
    description:
      "Where entries live: file (embedded), redis (RedBeat key layout) or django (django-celery-beat's tables; also spelled django_celery_beat.schedulers:DatabaseScheduler).",
    choices: SCHEDULER_CHOICES,
    helpValue: 'file|redis|django',
    default: 'file',
  }),
  schedule: Flags.string({ char: 's', description: "The file store's path (default ./tsq-beat-schedule.json)." }),
  'redis-url': Flags.string({ description: 'Redis for --scheduler redis (default: the broker URL when it is Redis).' }),
  'key-prefix': Flags.string({ description: 'RedBeat key prefix (redbeat_key_prefix).', default: 'redbeat:' }),
  'database-url': Flags.string({
    description:
      'The Django database for --scheduler django, e.g. postgresql://app@127.0.0.1/shop (default: database_url, then DATABASE_URL).',
  }),
  timezone: Flags.string({ description: 'Timezone crontab entries are read in (IANA name; default TSQ_TIMEZONE, then UTC).' }),
}

/** --timezone, else TSQ_TIMEZONE, else UTC (the precedence lives in loadConfig). */
export function zoneOf(flags: { timezone?: string }): string {
  return loadConfig({ timezone: flags.timezone }).timezone
}

type StoreFlagValues = {
  scheduler: string
  schedule?: string
  'redis-url'?: string
  'key-prefix': string
  'database-url'?: string
  timezone?: string
}

/** Which store the flags name, and where it is: what beat's options and openStore's share. */
function storeOf(flags: StoreFlagValues) {
  return {
    scheduler: storeKindOf(flags.scheduler),
    schedulePath: flags.schedule,
    redisUrl: flags['redis-url'],
    keyPrefix: flags['key-prefix'],
  }
}

/** The store flags as beat's options take them (`tsq beat` and `tsq worker -B`). */
export function storeOptionsOf(flags: StoreFlagValues) {
  return { ...storeOf(flags), databaseUrl: flags['database-url'], timezone: zoneOf(flags) }
}

/** What openStore takes, from the store flags and the client's config (its broker, its beat store TLS). */
export function storeOpenOptions(
  flags: StoreFlagValues,
  config: { brokerUrl: string; beatStoreSsl?: StoreOptions['ssl']; transportSettings?: { sentinel?: StoreOptions['sentinel'] } },
): StoreOptions {
  return {
    ...storeOf(flags),
    databaseUrl: flags['database-url'] || process.env.DATABASE_URL || undefined,
    tz: zoneOf(flags),
    brokerUrl: config.brokerUrl,
    ssl: config.beatStoreSsl,
    sentinel: config.transportSettings?.sentinel,
  }
}

export async function storeFromFlags(flags: StoreFlagValues & GlobalFlagValues): Promise<BeatStore> {
  // The broker as the other client commands take it (-b, the environment, -A's app, --config).
  return openStore(storeOpenOptions(flags, await clientConfig(flags)))
}
