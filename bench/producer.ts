// Sends per second, tsq beside its peers and the broker's own limit, all from one run:
//   tsq:     delay() awaited one at a time; 1,000 delay()s in flight; app.sendMany in lists of 1,000
//   celery:  Python Celery 5.2.6's app.send_task, one at a time (with and without confirm_publish on RabbitMQ)
//   bullmq:  Queue.add one at a time and 1,000 in flight; Queue.addBulk in lists of 1,000 (Redis only)
//   raw:     amqplib confirm channel, 1,000 in flight; ioredis LPUSH of a kombu envelope, 1,000 in flight
// Every send carries one small argument; a tsq send resolves only once the broker
// has it (publisher confirm on RabbitMQ, the LPUSH's reply on Redis).
// Usage: node --import tsx bench/producer.ts [--count 20000] [--one-by-one 3000] [--broker redis --broker amqp] [--only tsq,celery,bullmq,raw] [--json]
import { execFile } from 'node:child_process'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import amqplib from '../src/transport/amqp/amqplib.js'
import { createApp, signature, type App } from '../src/index.js'
import { encodeTaskV2 } from '../src/protocol/index.js'
import { buildEnvelope, serializeEnvelope } from '../src/transport/kombu-envelope.js'
import { AMQP_URL, REDIS_URL, brokerAvailable, uniqueName } from '../test/helpers/brokers.js'
import { deleteCeleryQueues } from '../test/interop/helpers/cleanup.js'
import { PYTHON, REPO_ROOT } from '../test/interop/helpers/python-worker.js'
import { benchEnv, formatEnv } from './lib/env.js'

type Broker = 'amqp' | 'redis'

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '20000' },
    'one-by-one': { type: 'string', default: '3000' },
    broker: { type: 'string', multiple: true },
    only: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
})

const COUNT = Number(values.count)
const ONE_BY_ONE = Number(values['one-by-one'])
const WINDOW = 1000
if (!(COUNT >= WINDOW && ONE_BY_ONE >= 1)) throw new Error(`--count must be >= ${WINDOW} and --one-by-one >= 1`)
const brokers = (values.broker ?? ['redis', 'amqp']) as Broker[]
const only = values.only ? new Set(values.only.split(',')) : undefined
const wanted = (who: string): boolean => !only || only.has(who)

interface Row {
  broker: Broker
  path: string
  who: string
  perSecond: number
}
const rows: Row[] = []

function say(line: string): void {
  if (values.json) process.stderr.write(`${line}\n`)
  else process.stdout.write(`${line}\n`)
}

function record(broker: Broker, path: string, who: string, sends: number, ms: number): void {
  const perSecond = (sends * 1000) / ms
  rows.push({ broker, path, who, perSecond })
  say(`  ${broker.padEnd(5)} ${path.padEnd(12)} ${who.padEnd(28)} ${Math.round(perSecond).toString().padStart(7)}/s`)
}

async function timed(run: () => Promise<void>): Promise<number> {
  const start = process.hrtime.bigint()
  await run()
  return Number(process.hrtime.bigint() - start) / 1e6
}

/** `n` sends with `window` of them in flight at any moment. */
async function inFlight(n: number, window: number, send: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0
  const lane = async (): Promise<void> => {
    while (next < n) await send(next++)
  }
  await Promise.all(Array.from({ length: Math.min(window, n) }, lane))
}

async function oneByOne(n: number, send: (i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < n; i++) await send(i)
}

async function inLists(n: number, size: number, sendList: (from: number, to: number) => Promise<unknown>): Promise<void> {
  for (let from = 0; from < n; from += size) await sendList(from, Math.min(n, from + size))
}

async function tsqFigures(broker: Broker, url: string, queue: string): Promise<void> {
  const app: App = createApp({ broker: url, defaultQueue: queue })
  const noop = app.task('proj.noop', (_i: number) => undefined)
  try {
    await noop.delay(-1) // the connection and the queue's declaration, untimed
    record(broker, 'one-by-one', 'tsq delay()', ONE_BY_ONE, await timed(() => oneByOne(ONE_BY_ONE, (i) => noop.delay(i))))
    record(broker, 'in-flight', 'tsq delay()', COUNT, await timed(() => inFlight(COUNT, WINDOW, (i) => noop.delay(i))))
    record(
      broker,
      'bulk',
      'tsq app.sendMany()',
      COUNT,
      await timed(() =>
        inLists(COUNT, WINDOW, (from, to) => {
          const sigs = []
          for (let i = from; i < to; i++) sigs.push(signature('proj.noop', [i]))
          return app.sendMany(sigs)
        }),
      ),
    )
  } finally {
    await app.close()
  }
}

function celeryFigure(broker: Broker, url: string, queue: string, confirm: boolean): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const script = resolve(REPO_ROOT, 'bench/peers/producer_send.py')
    execFile(
      PYTHON,
      [script, url, queue, String(ONE_BY_ONE), confirm ? 'confirm' : 'noconfirm'],
      { timeout: 600_000 },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`celery producer failed: ${stderr || err.message}`))
        const { sends, seconds } = JSON.parse(stdout.trim().split('\n').at(-1)!) as { sends: number; seconds: number }
        record(broker, 'one-by-one', confirm ? 'celery send_task (confirm)' : 'celery send_task', sends, seconds * 1000)
        resolvePromise()
      },
    )
  })
}

/** A kombu envelope / AMQP message like tsq's, so the raw write moves the same bytes. */
function sampleMessage(queue: string) {
  const m = encodeTaskV2('proj.noop', { args: [1], origin: 'gen1@bench' })
  const message = {
    body: Buffer.from(m.body),
    properties: {
      contentType: m.contentType,
      contentEncoding: m.contentEncoding,
      headers: m.headers as Record<string, never>,
      deliveryMode: 2 as const,
      priority: 0,
      correlationId: m.properties.correlationId,
      replyTo: m.properties.replyTo,
    },
  }
  return { message, envelope: serializeEnvelope(buildEnvelope('', queue, message)) }
}

async function rawAmqp(queue: string): Promise<void> {
  const { message } = sampleMessage(queue)
  const conn = await amqplib.connect(AMQP_URL)
  try {
    const ch = await conn.createConfirmChannel()
    await ch.assertQueue(queue, { durable: true })
    const p = message.properties
    const opts = {
      contentType: p.contentType,
      contentEncoding: p.contentEncoding,
      headers: p.headers,
      deliveryMode: 2,
      priority: 0,
      correlationId: p.correlationId,
      replyTo: p.replyTo,
    }
    const publish = () => new Promise<void>((ok, fail) => ch.publish('', queue, message.body, opts, (err) => (err ? fail(err) : ok())))
    record('amqp', 'in-flight', 'amqplib confirm channel', COUNT, await timed(() => inFlight(COUNT, WINDOW, publish)))
  } finally {
    await conn.close()
  }
}

async function rawRedis(queue: string): Promise<void> {
  const { envelope } = sampleMessage(queue)
  const redis = new Redis(REDIS_URL)
  try {
    record('redis', 'in-flight', 'ioredis LPUSH', COUNT, await timed(() => inFlight(COUNT, WINDOW, () => redis.lpush(queue, envelope))))
  } finally {
    redis.disconnect()
  }
}

async function bullmq(queueName: string): Promise<void> {
  const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null })
  const queue = new Queue(queueName, { connection })
  try {
    await queue.add('proj.noop', { args: [-1] })
    record(
      'redis',
      'one-by-one',
      'bullmq add',
      ONE_BY_ONE,
      await timed(() => oneByOne(ONE_BY_ONE, (i) => queue.add('proj.noop', { args: [i] }))),
    )
    record(
      'redis',
      'in-flight',
      'bullmq add',
      COUNT,
      await timed(() => inFlight(COUNT, WINDOW, (i) => queue.add('proj.noop', { args: [i] }))),
    )
    record(
      'redis',
      'bulk',
      'bullmq addBulk',
      COUNT,
      await timed(() =>
        inLists(COUNT, WINDOW, (from, to) => {
          const jobs = []
          for (let i = from; i < to; i++) jobs.push({ name: 'proj.noop', data: { args: [i] } })
          return queue.addBulk(jobs)
        }),
      ),
    )
  } finally {
    await queue.obliterate({ force: true }).catch(() => undefined)
    await queue.close()
    connection.disconnect()
  }
}

async function forBroker(broker: Broker): Promise<void> {
  if (!(await brokerAvailable(broker))) {
    say(`producer-${broker}  skipped: broker not reachable on 127.0.0.1`)
    return
  }
  const url = broker === 'amqp' ? AMQP_URL : REDIS_URL
  // One queue per contender, deleted as soon as it is done, so no queue grows past COUNT.
  const step = async (run: (queue: string) => Promise<void>): Promise<void> => {
    const queue = uniqueName(`tsq-bench-producer-${broker}`)
    try {
      await run(queue)
    } finally {
      await deleteCeleryQueues(broker, url, [queue]).catch(() => undefined)
    }
  }
  if (wanted('tsq')) await step((q) => tsqFigures(broker, url, q))
  if (wanted('celery')) {
    await step((q) => celeryFigure(broker, url, q, false))
    if (broker === 'amqp') await step((q) => celeryFigure(broker, url, q, true))
  }
  if (wanted('raw')) await step((q) => (broker === 'amqp' ? rawAmqp(q) : rawRedis(q)))
  if (broker === 'redis' && wanted('bullmq')) await step((q) => bullmq(q))
}

function rate(broker: Broker, path: string, who: string): number | undefined {
  return rows.find((r) => r.broker === broker && r.path === path && r.who === who)?.perSecond
}

function summary(name: string, tsq: number | undefined, peer: number | undefined, peerLabel: string): void {
  if (tsq === undefined || peer === undefined) return
  say(
    `${name}  tsq=${Math.round(tsq)}/s  peer=${Math.round(peer)}/s  ratio=${(tsq / peer).toFixed(2)}   (peer: ${peerLabel}; above 1 means tsq is faster)`,
  )
}

async function main(): Promise<void> {
  const env = benchEnv(PYTHON)
  say(`# producer  ${formatEnv(env)}  count=${COUNT} one-by-one=${ONE_BY_ONE} in-flight=${WINDOW}`)
  for (const broker of brokers) await forBroker(broker)
  summary(
    'producer-in-flight-redis',
    rate('redis', 'in-flight', 'tsq delay()'),
    rate('redis', 'in-flight', 'ioredis LPUSH'),
    'ioredis LPUSH, target 0.80',
  )
  summary(
    'producer-in-flight-redis-bullmq',
    rate('redis', 'in-flight', 'tsq delay()'),
    rate('redis', 'in-flight', 'bullmq add'),
    'bullmq add, target 1.5',
  )
  summary(
    'producer-bulk-redis',
    rate('redis', 'bulk', 'tsq app.sendMany()'),
    rate('redis', 'bulk', 'bullmq addBulk'),
    'bullmq addBulk, target 1.5',
  )
  summary('producer-one-by-one-redis', rate('redis', 'one-by-one', 'tsq delay()'), rate('redis', 'one-by-one', 'bullmq add'), 'bullmq add')
  summary(
    'producer-in-flight-amqp',
    rate('amqp', 'in-flight', 'tsq delay()'),
    rate('amqp', 'in-flight', 'amqplib confirm channel'),
    'amqplib confirm channel, target 0.80',
  )
  summary(
    'producer-one-by-one-amqp',
    rate('amqp', 'one-by-one', 'tsq delay()'),
    rate('amqp', 'one-by-one', 'celery send_task (confirm)'),
    'celery send_task with confirm_publish',
  )
  if (values.json) process.stdout.write(`${JSON.stringify({ env, rows })}\n`)
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
