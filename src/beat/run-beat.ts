// What `tsq beat` does between parsing flags and exiting: load the app's
// schedule, open the store and the broker, print the banner, run the loop,
// and on TERM/INT stop cleanly (the lease is released so a standby takes
// over at once rather than after the lock timeout).
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { loadConfig } from '../app/config.js'
import { createTransport, type Transport } from '../transport/index.js'
import { loadApp, resolveAppModule } from '../app/load-app.js'
import { Logger, parseLevel } from '../app/logger.js'
import { definitionFromConfig, type EntryDefinition } from './entry.js'
import { RedisLease } from './lease.js'
import { AmqpMutex } from './mutex.js'
import { openStore, StoreConfigError, type StoreKind } from './open-store.js'
import { acquireBeatPidfile } from './pidfile.js'
import { RedisStore } from './redis-store.js'
import { Beat, type HaMode } from './scheduler.js'
import { assertTimezone } from './timezone.js'

export interface RunBeatOptions {
  appSpec: string | undefined
  broker: string | undefined
  scheduler: StoreKind
  schedulePath: string | undefined
  redisUrl: string | undefined
  keyPrefix: string | undefined
  ha: HaMode | undefined
  lockTimeout: number
  maxInterval: number | undefined
  timezone: string
  loglevel: string
  logfile: string | null
  pidfile: string | null
  quiet: boolean
  version: string
}

export const DEFAULT_MAX_INTERVAL = 300

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

/** Resolves with the exit code. */
export async function runBeat(o: RunBeatOptions): Promise<number> {
  assertTimezone(o.timezone)
  if (o.logfile) mkdirSync(dirname(o.logfile), { recursive: true })
  const log = new Logger(parseLevel(o.loglevel), o.logfile)
  let definitions: EntryDefinition[] = []
  let appBroker: string | undefined
  if (o.appSpec) {
    const app = await loadApp(resolveAppModule(o.appSpec))
    appBroker = app.options.broker
    definitions = Object.entries(app.options.beatSchedule ?? {}).map(([name, raw]) => definitionFromConfig(name, raw))
  }
  const config = loadConfig({ broker: o.broker, appBroker })
  const ha: HaMode = o.ha ?? (o.scheduler === 'redis' ? 'lease' : 'none')
  if (ha === 'lease' && o.scheduler !== 'redis') throw new StoreConfigError('--ha lease needs --scheduler redis (the lease lives in Redis)')
  const maxInterval = o.maxInterval ?? DEFAULT_MAX_INTERVAL
  const releasePidfile = o.pidfile ? acquireBeatPidfile(o.pidfile, (m) => log.warning(m)) : () => undefined
  let transport: Transport | undefined
  const store = await openStore({ scheduler: o.scheduler, schedulePath: o.schedulePath, redisUrl: o.redisUrl, brokerUrl: config.brokerUrl, keyPrefix: o.keyPrefix, tz: o.timezone })
  try {
    transport = await createTransport(config.brokerUrl)
    await transport.connect()
    transport.on('error', (e) => log.warning(`beat: broker: ${e.message}`))
    if (ha === 'mutex' && transport.kind !== 'amqp') throw new StoreConfigError('--ha mutex needs a RabbitMQ broker (amqp://): it uses exclusive queues')
    let lease: RedisLease | undefined
    if (ha === 'lease') {
      const rs = store as RedisStore
      lease = new RedisLease(rs.redis, rs.lockKey, Math.round(o.lockTimeout * 1000))
    }
    const haText = ha === 'lease' ? `lease (${lease!.key}, lock timeout ${o.lockTimeout}s)` : ha === 'mutex' ? 'mutex (RabbitMQ exclusive queues)' : 'none (single beat)'
    if (!o.quiet) process.stdout.write(bannerText(o, { broker: transport.displayUrl, store: `${store.kind} ${store.location}`, ha: haText, maxInterval }))
    if (definitions.length || o.appSpec) await store.syncStatics(definitions, Date.now())
    const beat = new Beat({ store, transport, tz: o.timezone, maxInterval, ha, lease, mutex: ha === 'mutex' ? new AmqpMutex(transport) : undefined, log })
    const unwatch = await store.watch(() => beat.poke())
    const onSignal = (signal: NodeJS.Signals) => {
      log.info(`beat: ${signal} received, shutting down`)
      beat.stop()
    }
    process.on('SIGTERM', onSignal)
    process.on('SIGINT', onSignal)
    log.info('beat: Starting...')
    await beat.run()
    process.off('SIGTERM', onSignal)
    process.off('SIGINT', onSignal)
    await unwatch()
    await lease?.release()
    return 0
  } finally {
    await store.close().catch(() => undefined)
    await transport?.close().catch(() => undefined)
    releasePidfile()
  }
}
