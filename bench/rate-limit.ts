// bench/rate-limit: a cluster-wide rate limit's accuracy. Four tsq workers (two
// solo, two prefork -c 2) consume one task limited to --rate cluster-wide
// (rateLimitScope 'cluster') for --seconds, from a queue loaded well past what
// they may run; beside them, in the same run and on the same Redis, four BullMQ
// Workers on a queue with BullMQ's queue limiter at the same rate. Each side's
// figure is its runs within --seconds of its first. While it runs, `tsq inspect
// reserved` is sampled: no worker may hold more than its prefetch window. Then
// `tsq control rate_limit` lowers the rate: the figure is how long after the
// command the last run at the old spacing started.
//   node --import tsx bench/rate-limit.ts [--seconds 60] [--rate 50] [--broker redis|amqp]
//     [--redis redis://127.0.0.1:6379/11] [--amqp amqp://guest:guest@127.0.0.1:5672//] [--json]
import { spawn, type ChildProcess } from 'node:child_process'
import { resolve } from 'node:path'
import { Queue as BullQueue, Worker as BullWorker } from 'bullmq'
import { Redis } from 'ioredis'
import { sendTask } from '../src/client/send-task.js'
import { createTransport } from '../src/transport/index.js'

const arg = (name: string, dflt: string) => {
  const at = process.argv.indexOf(`--${name}`)
  return at > 0 ? process.argv[at + 1]! : dflt
}
const SECONDS = Number(arg('seconds', '60'))
const RATE = Number(arg('rate', '50'))
const LOWER = Math.max(1, Math.round(RATE / 2.5))
const KIND = arg('broker', 'redis') as 'redis' | 'amqp'
const REDIS = arg('redis', process.env.TSQ_TEST_REDIS_URL?.replace(/\/\d*$/, '/11') ?? 'redis://127.0.0.1:6379/11')
const AMQP = arg('amqp', 'amqp://guest:guest@127.0.0.1:5672//')
const BROKER = KIND === 'redis' ? REDIS : AMQP
const JSON_OUT = process.argv.includes('--json')
const ROOT = resolve(import.meta.dirname, '..')
const MODULE = resolve(ROOT, 'test/fixtures/tasks/rate-tasks.js')
const TAG = `${process.pid}-${Date.now().toString(36)}`
const QUEUE = `tsq-bench-rate-${TAG}`
const LOG = `tsq-bench-rate-log-${TAG}`
const LOAD = Math.ceil(RATE * (SECONDS + 20) * 1.3)
const WORKERS = [
  { pool: 'solo', concurrency: 1 },
  { pool: 'solo', concurrency: 1 },
  { pool: 'prefork', concurrency: 2 },
  { pool: 'prefork', concurrency: 2 },
] as const
const PREFETCH_MULTIPLIER = 4

const say = (line: string) => (JSON_OUT ? process.stderr : process.stdout).write(`${line}\n`)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface Run {
  n: number
  at: number
}

/** Runs within `seconds` of the first. */
function inWindow(ats: number[], seconds: number): number {
  if (ats.length === 0) return 0
  const t0 = Math.min(...ats)
  return ats.filter((t) => t < t0 + seconds * 1000).length
}

function tsq(args: string[]): Promise<{ code: number | null; stdout: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [resolve(ROOT, 'bin/run.js'), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] })
    let stdout = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.on('exit', (code) => done({ code, stdout }))
  })
}

async function startWorkers(): Promise<Array<{ child: ChildProcess; node: string; prefetch: number }>> {
  const env = { ...process.env, NO_COLOR: '1', TSQ_RATE: `${RATE}/s`, TSQ_RATE_LOG: LOG, TSQ_TEST_REDIS_URL: REDIS }
  const started = WORKERS.map((w, i) => {
    const node = `rate${i + 1}-${TAG}@bench`
    const child = spawn(
      process.execPath,
      [
        resolve(ROOT, 'bin/run.js'),
        'worker',
        '-A',
        MODULE,
        '-b',
        BROKER,
        '--result-backend',
        REDIS,
        '-n',
        node,
        '-P',
        w.pool,
        '-c',
        String(w.concurrency),
        '-Q',
        QUEUE,
        '-l',
        'WARNING',
        '--without-mingle',
        '--without-gossip',
      ],
      { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    )
    let out = ''
    child.stdout!.on('data', (d) => (out += d))
    child.stderr!.on('data', (d) => (out += d))
    const ready = (async () => {
      for (let t = 0; t < 600 && !out.includes(`${node} ready.`); t += 1) {
        if (child.exitCode !== null) throw new Error(`worker ${node} exited: ${out}`)
        await sleep(100)
      }
    })()
    return { child, node, prefetch: w.concurrency * PREFETCH_MULTIPLIER, ready }
  })
  await Promise.all(started.map((s) => s.ready))
  return started
}

async function main(): Promise<void> {
  const redis = new Redis(REDIS)
  await redis.del(LOG, 'tsq:rate:rate.tick', 'tsq:rate-tat:rate.tick', 'tsq:rate-deferred:rate.tick')
  say(
    `# rate-limit  broker=${KIND}  rate=${RATE}/s  seconds=${SECONDS}  load=${LOAD}  workers=2 solo + 2 prefork -c 2  node=${process.version}`,
  )
  const workers = await startWorkers()
  const bullConnection = new Redis(REDIS, { maxRetriesPerRequest: null })
  const bullQueue = new BullQueue(`tsq-bench-rate-bull-${TAG}`, { connection: bullConnection })
  const bullWorkers: BullWorker[] = []
  // BullMQ does not close a connection it was handed: left open, one keeps the bench from exiting.
  const bullConnections: Redis[] = []
  const bullRuns: number[] = []
  const maxReserved = new Map<string, number>()
  try {
    for (let i = 0; i < LOAD; i += 1000)
      await bullQueue.addBulk(Array.from({ length: Math.min(1000, LOAD - i) }, (_, j) => ({ name: 'tick', data: { n: i + j } })))
    const transport = await createTransport(BROKER)
    await transport.connect()
    try {
      for (let i = 0; i < LOAD; i += 1)
        await sendTask(transport, 'rate.tick', { args: [i], queue: QUEUE, exchange: QUEUE, routingKey: QUEUE })
    } finally {
      await transport.close()
    }
    for (let i = 0; i < 4; i += 1) {
      const connection = new Redis(REDIS, { maxRetriesPerRequest: null })
      bullConnections.push(connection)
      const w = new BullWorker(
        bullQueue.name,
        async () => {
          bullRuns.push(Date.now())
        },
        { connection, concurrency: 1, limiter: { max: RATE, duration: 1000 } },
      )
      bullWorkers.push(w)
    }

    // While both run: how much each tsq worker holds (inspect reserved, which lists what waits for a slot too).
    const deadline = Date.now() + (SECONDS + 2) * 1000
    while (Date.now() < deadline) {
      const r = await tsq(['inspect', 'reserved', '-b', BROKER, '--json', '-t', '2'])
      try {
        const doc = JSON.parse(r.stdout) as Record<string, unknown[]>
        for (const [node, list] of Object.entries(doc)) maxReserved.set(node, Math.max(maxReserved.get(node) ?? 0, list.length))
      } catch {
        // A sample the machine was too busy to answer: the next one counts.
      }
      await sleep(3000)
    }
    const runs = (await redis.lrange(LOG, 0, -1)).map((l) => JSON.parse(l) as Run)
    const tsqCount = inWindow(
      runs.map((r) => r.at),
      SECONDS,
    )
    const bullCount = inWindow(bullRuns, SECONDS)
    const want = RATE * SECONDS
    const pct = (x: number) => `${(((x - want) / want) * 100).toFixed(2)}%`
    const over = workers.filter((w) => (maxReserved.get(w.node) ?? 0) > w.prefetch)
    say(
      `rate-limit-${KIND}  tsq=${tsqCount} (${pct(tsqCount)})  peer=${bullCount} (${pct(bullCount)}, BullMQ limiter ${RATE}/1000ms)  want=${want} +/- 2%`,
    )
    say(
      `rate-limit-${KIND}-held  max reserved per worker: ${workers.map((w) => `${w.node.split('-')[0]}=${maxReserved.get(w.node) ?? '?'}/${w.prefetch}`).join(' ')}  ${over.length ? 'OVER THE PREFETCH WINDOW' : 'within the prefetch window'}`,
    )

    // The rate lowered at run time: when did the old spacing stop?
    for (const w of bullWorkers) await w.close()
    // When the cluster's store has the new rate (what every worker's next take reads), polled beside the command.
    let storedAt = 0
    const watcher = new Redis(REDIS)
    const watching = (async () => {
      while (!storedAt) {
        if ((await watcher.hget('tsq:rate:rate.tick', 'rate')) === `${LOWER}/s`) storedAt = Date.now()
        else await sleep(2)
      }
    })()
    const sentAt = Date.now()
    const control = await tsq(['control', 'rate_limit', 'rate.tick', `${LOWER}/s`, '-b', BROKER, '-t', '3'])
    const replied = Date.now()
    await Promise.race([watching, sleep(2000)])
    storedAt ||= replied
    watcher.disconnect()
    await sleep(4000)
    const later = (await redis.lrange(LOG, 0, -1))
      .map((l) => (JSON.parse(l) as Run).at)
      .filter((t) => t >= sentAt - 2000)
      .sort((a, b) => a - b)
    // 250 ms bins from the store's change: the effect is the end of the last bin with more runs than the new rate allows (+1).
    const BIN_MS = 250
    const allowed = Math.ceil((LOWER * BIN_MS) / 1000) + 1
    let lastOld = storedAt
    for (let start = storedAt; start < replied + 3000; start += BIN_MS) {
      const inBin = later.filter((t) => t >= start && t < start + BIN_MS).length
      if (inBin > allowed) lastOld = start + BIN_MS
    }
    const newRuns = later.filter((t) => t >= replied + 1000).length
    say(
      `rate-limit-${KIND}-control  ${RATE}/s -> ${LOWER}/s: the old rate ended ${lastOld - storedAt} ms after the store had the new rate (250 ms bins) (${storedAt - sentAt} ms after \`tsq control\` was started, ${control.code === 0 ? 'OK' : 'FAILED'})  then ${(newRuns / 3).toFixed(1)}/s`,
    )
    if (JSON_OUT)
      process.stdout.write(
        `${JSON.stringify({ rate: RATE, seconds: SECONDS, broker: KIND, tsq: tsqCount, bullmq: bullCount, maxReserved: Object.fromEntries(maxReserved), controlEffectMs: lastOld - storedAt, controlStoredMs: storedAt - sentAt })}\n`,
      )
  } finally {
    for (const w of bullWorkers) await w.close().catch(() => undefined)
    await bullQueue.obliterate({ force: true }).catch(() => undefined)
    await bullQueue.close()
    bullConnection.disconnect()
    for (const c of bullConnections) c.disconnect()
    for (const w of workers) {
      try {
        process.kill(-w.child.pid!, 'SIGTERM')
      } catch {
        // gone
      }
    }
    await sleep(3000)
    for (const w of workers) {
      try {
        process.kill(-w.child.pid!, 'SIGKILL')
      } catch {
        // gone
      }
    }
    await redis.del(LOG, 'tsq:rate:rate.tick', 'tsq:rate-tat:rate.tick', 'tsq:rate-deferred:rate.tick', `_tsq.parked.tsq.deferred`)
    if (KIND === 'redis') await redis.del(QUEUE)
    redis.disconnect()
  }
}

await main()
