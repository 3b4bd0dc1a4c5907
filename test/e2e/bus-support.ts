// Shared by the bus e2e and interop tests: a broker per kind with its
// environment, workers of the fixture service (test/fixtures/bus/service.js),
// the handlers' run log, firing, and clean-up of every entity a test made.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { AMQP_URL, REDIS_URL, type BrokerKind } from '../helpers/brokers.js'
import { embeddedBrokerEnv, ROOT, runTsq, startWorker, tempTsqHome, type CliResult, type SpawnedWorker } from '../helpers/cli.js'
import { createTransport, type Transport } from '../../src/transport/index.js'
import { fireEvent } from '../../src/bus/events-app.js'
import { archivedExchangeName, handlerQueueName, recoverExchangeName, retryExchangeName } from '../../src/bus/names.js'
import { parkedKey } from '../../src/transport/redis/parking.js'
import { forgetService } from '../../src/bus/registry.js'

export const SERVICE_MODULE = join(ROOT, 'test', 'fixtures', 'bus', 'service.js')

export interface BusBroker {
  kind: BrokerKind
  url: string
  /** The environment every tsq process of the test runs with. */
  env: NodeJS.ProcessEnv
}

/**
 * The bus tests' own Redis database (TSQ_TEST_BUS_REDIS_DB, default 7): kombu's
 * `unacked_mutex` is one per database, and another suite's worker killed with -9
 * in the middle of a restore pass holds it for 300 s, which would stall ours.
 */
export function busRedisUrl(): string {
  const u = new URL(REDIS_URL)
  u.pathname = `/${process.env.TSQ_TEST_BUS_REDIS_DB ?? '7'}`
  u.search = ''
  return u.toString()
}

/** Redis restores a dead worker's unacked events after its visibility timeout: short here, so kill -9 tests end soon. */
export function busBroker(kind: BrokerKind): BusBroker {
  if (kind === 'file') {
    const home = tempTsqHome()
    const url = `file://${join(home, 'broker')}`
    return { kind, url, env: embeddedBrokerEnv(home, { TSQ_BROKER_URL: url }) }
  }
  const url = kind === 'amqp' ? AMQP_URL : `${busRedisUrl()}?visibility_timeout=6`
  return { kind, url, env: { TSQ_BROKER_URL: url, CELERY_BROKER_URL: '', TSQ_RESULT_BACKEND: '', CELERY_RESULT_BACKEND: '' } }
}

export interface RunEntry {
  service: string
  pid: number
  at: number
  event: string
  id: string
  retries: number
  args: unknown[]
  ok: boolean
}

export function readRuns(log: string): RunEntry[] {
  if (!existsSync(log)) return []
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as RunEntry)
}

export interface ServiceWorkerOptions {
  service: string
  events: string[]
  log: string
  nodename: string
  env?: NodeJS.ProcessEnv
  pool?: 'solo' | 'prefork' | 'threads'
  concurrency?: number
}

/** A worker of the fixture service, as the library's README starts one: without mingle, gossip and heartbeat. */
export function startServiceWorker(broker: BusBroker, o: ServiceWorkerOptions): Promise<SpawnedWorker> {
  return startWorker(
    [
      '-A',
      SERVICE_MODULE,
      '-P',
      o.pool ?? 'solo',
      '-c',
      String(o.concurrency ?? 2),
      '--without-mingle',
      '--without-gossip',
      '--without-heartbeat',
      '-l',
      'INFO',
    ],
    {
      nodename: o.nodename,
      env: { ...broker.env, BUS_SERVICE: o.service, BUS_EVENTS: o.events.join(','), BUS_LOG: o.log, ...o.env },
    },
  )
}

export function tsq(broker: BusBroker, args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return runTsq(args, { env: { ...broker.env, ...env }, timeoutMs: 60_000 })
}

export async function withBrokerTransport<T>(broker: BusBroker, work: (t: Transport) => Promise<T>): Promise<T> {
  const t = await createTransport(broker.url)
  await t.connect()
  try {
    return await work(t)
  } finally {
    await t.close()
  }
}

/** Fires events as a Python service does (send_task to `events`, routing key = event), confirmed. */
export function fire(broker: BusBroker, event: string, argsList: unknown[][]): Promise<string[]> {
  return withBrokerTransport(broker, async (t) => {
    const ids: string[] = []
    for (const args of argsList) ids.push(await fireEvent(t, event, args))
    return ids
  })
}

export async function waitUntil<T>(
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs: number,
  what: string,
  detail: () => string = () => '',
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${detail()}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

export function jsonOf<T>(res: CliResult, what: string): T {
  if (res.code !== 0) throw new Error(`${what} exited ${res.code}\nstdout: ${res.stdout}\nstderr: ${res.stderr}`)
  return JSON.parse(res.stdout) as T
}

/** Removes what a service made on the broker: its queues, exchanges, parking lots and registry record. */
export async function cleanupService(broker: BusBroker, service: string, events: string[], maxRetries = 10): Promise<void> {
  if (broker.kind === 'file') return
  await withBrokerTransport(broker, (t) => forgetService(t, service)).catch(() => undefined)
  const queues = [
    ...events.map((e) => handlerQueueName(service, e)),
    ...Array.from({ length: maxRetries }, (_, n) => retryExchangeName(service, n)),
    archivedExchangeName(service),
  ]
  if (broker.kind === 'amqp') {
    const amqplib = await import('amqplib')
    const conn = await amqplib.connect(broker.url)
    try {
      for (const q of queues) {
        const ch = await conn.createChannel()
        ch.on('error', () => undefined)
        await ch.deleteQueue(q).catch(() => undefined)
        await ch.close().catch(() => undefined)
      }
      for (const x of [recoverExchangeName(service), ...queues.slice(events.length)]) {
        const ch = await conn.createChannel()
        ch.on('error', () => undefined)
        await ch.deleteExchange(x).catch(() => undefined)
        await ch.close().catch(() => undefined)
      }
    } finally {
      await conn.close().catch(() => undefined)
    }
    return
  }
  const { Redis } = await import('ioredis')
  const redis = new Redis(broker.url.split('?')[0]!)
  try {
    const members = await redis.smembers('_kombu.binding.events')
    const ours = members.filter((m) => events.some((e) => m.endsWith(`\x06\x16${handlerQueueName(service, e)}`)))
    if (ours.length) await redis.srem('_kombu.binding.events', ...ours)
    const stepsAndArchive = queues.slice(events.length)
    await redis.del(
      ...queues.map(parkedKey),
      ...queues,
      ...[recoverExchangeName(service), ...stepsAndArchive].map((x) => `_kombu.binding.${x}`),
    )
    // What a Python worker of the library declares on Redis besides: Celery's default queue `events`.
    await redis.srem('_kombu.binding.events', 'events\x06\x16^events$\x06\x16events')
  } finally {
    redis.disconnect()
  }
}
