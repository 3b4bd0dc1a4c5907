// What `tsq beat` does between parsing flags and exiting: load the app's
// schedule, open the store and the broker, print the banner, run the loop,
// and on TERM/INT stop cleanly (the lease is released so a standby takes
// over at once rather than after the lock timeout).
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { beatStoreSslFromConf, loadConfig, positiveSetting, queueDefinition, settingsRefusals, type Route } from '../config/index.js'
import { createTransport, urlListSetting, type SslSettings, type Transport, type TransportSettings } from '../transport/index.js'
import { loadApp, resolveAppModule, type AppSignals } from '../app/index.js'
import type { BodyEncoder } from '../protocol/index.js'
import { Logger, parseLevel } from '../process/index.js'
import { HealthServer } from '../process/health/index.js'
import { definitionFromConfig, type EntryDefinition } from './entry.js'
import { RedisLease } from './lease.js'
import { AmqpMutex } from './mutex.js'
import { DjangoStore } from './django-store.js'
import { openStore, redisUrlFor, StoreConfigError, type StoreKind } from './open-store.js'
import { acquireBeatPidfile } from './pidfile.js'
import { RedisStore } from './redis-store.js'
import { Beat, type BeatOptions, type HaMode } from './scheduler.js'
import { assertTimezone } from './timezone.js'
import { TsqError } from '../protocol/index.js'

/** `tsq beat`: a beat (StartBeatOptions, below) as a process of its own. */
export interface RunBeatOptions extends Omit<StartBeatOptions, 'log'> {
  loglevel: string
  logfile: string | null
  pidfile: string | null
  quiet: boolean
  version: string
  /** --health-port and --health-stuck-after. */
  health?: { port?: string; stuckAfter?: number }
}

export const DEFAULT_MAX_INTERVAL = 300
/** django-celery-beat's DatabaseScheduler wakes every 5 s so admin changes are seen soon. */
export const DJANGO_MAX_INTERVAL = 5
/** Seconds a leader's lease lasts (--lock-timeout); a follower takes over within it. */
export const DEFAULT_LOCK_TIMEOUT = 10

function bannerText(o: RunBeatOptions, info: { broker: string; store: string; ha: string; maxInterval: number }): string {
  const now = new Date()
  const lines = [
    `tsq beat v${o.version} is starting.`,
    `__    -    ... __   -        _`,
    `LocalTime -> ${now.toISOString().replace('T', ' ').slice(0, 19)}`,
    `Configuration ->`,
    `    . broker -> ${info.broker}`,
    `    . loader -> ${o.appSpec ?? '(no app module)'}`,
    `    . scheduler -> ${info.store}`,
    `    . ha -> ${info.ha}`,
    `    . timezone -> ${o.timezone}`,
    `    . logfile -> ${o.logfile ?? '[stderr]'}@%${parseLevel(o.loglevel)}`,
    `    . maxinterval -> ${info.maxInterval}s`,
  ]
  return `${lines.join('\n')}\n`
}

/** What starting a beat needs besides the process-level parts (pidfile, banner, signals). */
export interface StartBeatOptions {
  appSpec: string | undefined
  broker: string | undefined
  scheduler: StoreKind
  schedulePath: string | undefined
  redisUrl: string | undefined
  keyPrefix: string | undefined
  /** --scheduler django: the Django database (else the app's database_url, else DATABASE_URL). */
  databaseUrl?: string | undefined
  ha: HaMode | undefined
  lockTimeout: number
  maxInterval: number | undefined
  timezone: string
  log: Logger
}

/** A beat whose loop is running. */
export interface RunningBeat {
  /** Where it sends and keeps its entries, for a banner. */
  readonly info: { broker: string; store: string; ha: string; maxInterval: number }
  /** Resolves when the loop has ended and the store, lease and broker are let go. */
  readonly done: Promise<void>
  /** Ends the loop (the lease is released, so a standby takes over at once); resolves with `done`. */
  stop(): Promise<void>
  /** For /readyz: null while the loop runs and its last tick went through (holding the lease or waiting for it), else why not. */
  unready(): string | null
}

/**
 * Opens the store and the broker, syncs the app's entries and starts the
 * loop. `tsq beat` runs it as its own process; `tsq worker -B` runs it beside
 * the worker, as Celery's embedded beat.
 */
export async function startBeat(o: StartBeatOptions): Promise<RunningBeat> {
  assertTimezone(o.timezone)
  const log = o.log
  let definitions: EntryDefinition[] = []
  let appBroker: string | undefined
  let routeFor: ((taskName: string) => Route) | undefined
  let transportSettings: TransportSettings = {}
  let storeSsl: SslSettings | boolean | null = null
  let signals: AppSignals | undefined
  let sendDefaults: BeatOptions['sendDefaults']
  let confMaxInterval: number | null = null
  let encoder: BodyEncoder | undefined
  let confDatabaseUrl: string | undefined
  if (o.appSpec) {
    const app = await loadApp(resolveAppModule(o.appSpec))
    const conf = app.options.conf ?? {}
    const refusals = settingsRefusals(conf, app.defaultQueue)
    if (refusals.length) throw new TsqError('CONFIG', refusals.join('; '))
    const queues = app.queueSettings
    sendDefaults = { resolveQueue: (name) => queueDefinition(queues, name), deliveryMode: queues.defaultDeliveryMode }
    confMaxInterval = positiveSetting(conf.beat_max_loop_interval)
    confDatabaseUrl = typeof conf.database_url === 'string' && conf.database_url ? conf.database_url : undefined
    appBroker = urlListSetting(app.options.broker) ?? urlListSetting(conf.broker_url)
    routeFor = (taskName) => app.routeFor(taskName)
    transportSettings = app.transportSettings
    storeSsl = beatStoreSslFromConf(app.conf)
    signals = app.signals
    encoder = app.taskEncoder()
    definitions = Object.entries(app.options.beatSchedule ?? {}).map(([name, raw]) => definitionFromConfig(name, raw))
  }
  const config = loadConfig({ broker: o.broker, appBroker })
  const ha: HaMode = o.ha ?? (o.scheduler === 'redis' ? 'lease' : 'none')
  if (ha === 'lease' && o.scheduler === 'file')
    throw new StoreConfigError('--ha lease needs --scheduler redis or django (the lease lives in Redis)')
  // beat_max_loop_interval: 0 (Celery's default) leaves tsq's.
  const maxInterval = o.maxInterval ?? confMaxInterval ?? (o.scheduler === 'django' ? DJANGO_MAX_INTERVAL : DEFAULT_MAX_INTERVAL)
  let transport: Transport | undefined
  const storeOptions = {
    scheduler: o.scheduler,
    schedulePath: o.schedulePath,
    redisUrl: o.redisUrl,
    brokerUrl: config.brokerUrl,
    keyPrefix: o.keyPrefix,
    tz: o.timezone,
    ssl: storeSsl,
    sentinel: transportSettings.sentinel,
    liveness: transportSettings.redisLiveness,
    databaseUrl: o.databaseUrl ?? confDatabaseUrl ?? (process.env.DATABASE_URL || undefined),
    log,
  }
  const store = await openStore(storeOptions)
  // The django store's lease lives in a Redis of its own (--redis-url, or a Redis broker).
  let leaseRedis: RedisStore | undefined
  const release = async () => {
    await store.close().catch(() => undefined)
    await leaseRedis?.close().catch(() => undefined)
    await transport?.close().catch(() => undefined)
  }
  try {
    transport = await createTransport(config.brokerWriteUrl, transportSettings)
    await transport.connect()
    transport.on('error', (e) => log.warning(`beat: broker: ${e.message}`))
    if (ha === 'mutex' && transport.kind !== 'amqp')
      throw new StoreConfigError('--ha mutex needs a RabbitMQ broker (amqp://): it uses exclusive queues')
    let lease: RedisLease | undefined
    if (ha === 'lease' && store instanceof DjangoStore) {
      leaseRedis = await RedisStore.open({
        url: redisUrlFor(storeOptions),
        ssl: storeSsl,
        sentinel: transportSettings.sentinel,
        liveness: transportSettings.redisLiveness,
        keyPrefix: o.keyPrefix,
        tz: o.timezone,
      })
      const redis = leaseRedis.redis
      lease = new RedisLease(redis, store.leaseKey, Math.round(o.lockTimeout * 1000))
      store.useFence(async (fence) => (await redis.get(fence.key)) === fence.token)
    } else if (ha === 'lease') {
      const rs = store as RedisStore
      lease = new RedisLease(rs.redis, rs.lockKey, Math.round(o.lockTimeout * 1000))
    }
    const haText =
      ha === 'lease'
        ? `lease (${lease!.key}, lock timeout ${o.lockTimeout}s)`
        : ha === 'mutex'
          ? 'mutex (RabbitMQ exclusive queues)'
          : store.kind === 'django'
            ? 'none (each run claimed in the database: a compare-and-set on total_run_count)'
            : 'none (single beat)'
    if (definitions.length || o.appSpec) await store.syncStatics(definitions, Date.now())
    const beat = new Beat({
      store,
      transport,
      tz: o.timezone,
      maxInterval,
      ha,
      lease,
      routeFor,
      signals,
      sendDefaults,
      encoder,
      mutex: ha === 'mutex' ? new AmqpMutex(transport) : undefined,
      log,
    })
    let stopping = false
    const unwatch = await store.watch(() => beat.poke())
    log.info('beat: Starting...')
    const done = (async () => {
      try {
        await beat.run()
        await unwatch()
        await lease?.release()
      } finally {
        await release()
      }
    })()
    return {
      info: { broker: transport.displayUrl, store: `${store.kind} ${store.location}`, ha: haText, maxInterval },
      done,
      stop: () => {
        stopping = true
        beat.stop()
        return done
      },
      unready: () => beatUnreadiness(stopping, beat.lastTickError ?? lease?.unreachable ?? null, beat.tickSince, Date.now()),
    }
  } catch (error) {
    await release()
    throw error
  }
}

/** A tick this long has waited on a store or broker that does not answer. */
const TICK_STUCK_MS = 15_000

/** Why a beat is not ready (null: its loop runs, holding the lease or waiting for it). */
export function beatUnreadiness(stopping: boolean, lastTickError: string | null, tickSince: number | null, now: number): string | null {
  if (stopping) return 'stopping'
  if (tickSince !== null && now - tickSince > TICK_STUCK_MS)
    return `a tick has waited ${((now - tickSince) / 1000).toFixed(0)} s on the store or the broker`
  return lastTickError === null ? null : `the last tick failed: ${lastTickError}`
}

/** `tsq beat`: resolves with the exit code. */
export async function runBeat(o: RunBeatOptions): Promise<number> {
  if (o.logfile) mkdirSync(dirname(o.logfile), { recursive: true })
  const log = new Logger(parseLevel(o.loglevel), o.logfile)
  const releasePidfile = o.pidfile ? acquireBeatPidfile(o.pidfile, (m) => log.warning(m)) : () => undefined
  let health: HealthServer | null = null
  try {
    // Before the store opens, so /healthz answers and /readyz says "starting" meanwhile.
    if (o.health?.port) health = await HealthServer.start({ listen: o.health.port, stuckAfterS: o.health.stuckAfter })
    health?.setReady(false, 'starting: opening the store and the broker')
    const beat = await startBeat({ ...o, log })
    health?.pollReadiness(() => beat.unready())
    if (!o.quiet) process.stdout.write(bannerText(o, beat.info))
    const onSignal = (signal: NodeJS.Signals) => {
      log.info(`beat: ${signal} received, shutting down`)
      void beat.stop()
    }
    process.on('SIGTERM', onSignal)
    process.on('SIGINT', onSignal)
    await beat.done
    process.off('SIGTERM', onSignal)
    process.off('SIGINT', onSignal)
    return 0
  } finally {
    await health?.close()
    releasePidfile()
  }
}
