// Noop tasks per second drained from a pre-filled queue, on RabbitMQ and Redis:
// tsq (each pool) beside Python Celery 5.2.6's worker (prefork, threads, solo)
// and a plain amqplib / ioredis consumer (the broker's limit on this machine),
// all from one run; plus each worker's RSS (whole process tree) idle and after,
// and the CPU that the consumer and the broker server spent per 1,000 tasks
// (on a 2-core machine the two compete, so this says which one sets the pace).
//
//   npm run build && node --import tsx bench/worker-throughput.ts [--tasks 20000] [--broker amqp --broker redis] [--only tsq-solo,celery-prefork] [--runs 3] [--json]
//     [--node-arg=--cpu-prof ...] [--tsq-arg=--prefetch-multiplier=64 ...] [--celery-arg=--prefetch-multiplier=64 ...] [--raw-prefetch 32]
//
// Method per contender: start the worker on an empty queue, wait until it
// answers ping, read its idle RSS; warm it up through queue Q (add_consumer Q,
// two untimed bursts, cancel_consumer Q); fill Q with N protocol-v2
// `proj.noop` messages, wait for the broker server to go quiet, then
// add_consumer Q again. The rate is the messages consumed between the first
// drop in Q's depth and the poll that sees Q empty, over that time: start-up
// is not counted, and no worker logs per task (-l WARNING).
import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readFileSync, readdirSync } from 'node:fs'
import { availableParallelism, hostname } from 'node:os'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
// Through tsq's loader: the fill's headers are then encoded as py-amqp encodes them, and tsq's own client (add_consumer) can load it too.
import amqplib from '../src/transport/amqp/amqplib.js'
import { Queue as BullQueue, Worker as BullWorker } from 'bullmq'
import { Redis } from 'ioredis'
import { encodeTaskV2 } from '../src/protocol/index.js'
import { broadcast } from '../src/client/control.js'
import { benchEnv, formatEnv } from './lib/env.js'
import { BROKER_URLS } from './lib/task-queue.js'
import { RedisKeys } from '../src/transport/redis/keys.js'
import { UnackedStore } from '../src/transport/redis/consume/unacked.js'

const ROOT = resolve(import.meta.dirname, '..')
const TSQ_BIN = resolve(ROOT, 'bin/run.js')
const NOOP_MODULE = resolve(ROOT, 'test/fixtures/tasks/noop-tasks.js')
const PY_DIR = resolve(ROOT, 'test/interop/py')
const PYTHON = '/usr/bin/python3'
const URLS = BROKER_URLS
type Kind = keyof typeof URLS

interface Contender {
  name: string
  label: string
  side: 'tsq' | 'celery' | 'raw' | 'bullmq' | 'floor'
  /** BullMQ Worker's concurrency (side 'bullmq', Redis only). */
  bullmqConcurrency?: number
  /** The claim floor's window, and its claims on the wire at once (side 'floor', Redis only). */
  floorWindow?: number
  floorInFlight?: number
  /** argv for the worker; none for the plain consumer. */
  argv?: (kind: Kind, node: string, idleQueue: string) => { cmd: string; args: string[]; cwd: string; env: NodeJS.ProcessEnv }
}

/** --node-arg: extra node options for tsq workers (e.g. --cpu-prof to see where the time goes). */
const nodeArgs = (): string[] => (values['node-arg'] as string[] | undefined) ?? []
/** --tsq-arg: extra `tsq worker` options for every tsq contender (e.g. --prefetch-multiplier=16), to try settings. */
const tsqArgs = (): string[] => (values['tsq-arg'] as string[] | undefined) ?? []
/** --celery-arg: the same for every Celery contender, so a setting can be tried on both sides alike. */
const celeryArgs = (): string[] => (values['celery-arg'] as string[] | undefined) ?? []
/** The plain AMQP consumer's prefetch: 32 by default, as tsq solo -c 8 at Celery's default multiplier (4). */
const rawPrefetch = (): number => Number(values['raw-prefetch'])

/** c undefined: no -c, the worker's default (the CPU count), as a user who does not tune it runs it. */
const tsqWorker =
  (pool: string, c?: number): Contender['argv'] =>
  (kind, node, idleQueue) => ({
    cmd: process.execPath,
    args: [
      ...nodeArgs(),
      TSQ_BIN,
      'worker',
      '-A',
      NOOP_MODULE,
      '-b',
      URLS[kind],
      '-n',
      node,
      '-P',
      pool,
      ...(c === undefined ? [] : ['-c', String(c)]),
      '-Q',
      idleQueue,
      '-l',
      'WARNING',
      '--without-mingle',
      '--without-gossip',
      ...tsqArgs(),
    ],
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1' },
  })

const celeryWorker =
  (pool: string, c: number): Contender['argv'] =>
  (kind, node, idleQueue) => ({
    cmd: PYTHON,
    args: [
      '-m',
      'celery',
      '-A',
      'worker_app',
      'worker',
      '-n',
      node,
      '-P',
      pool,
      '-c',
      String(c),
      '-Q',
      idleQueue,
      '-l',
      'WARNING',
      '--without-mingle',
      '--without-gossip',
      ...celeryArgs(),
    ],
    cwd: PY_DIR,
    env: { ...process.env, PYTHONPATH: PY_DIR, PYTHONDONTWRITEBYTECODE: '1', TSQ_WI_BROKER: URLS[kind], TSQ_WI_BACKEND: '' },
  })

const CONTENDERS: Contender[] = [
  { name: 'raw', label: 'plain consumer', side: 'raw' },
  { name: 'tsq-solo-default', label: `tsq solo (-c ${availableParallelism()})`, side: 'tsq', argv: tsqWorker('solo') },
  { name: 'tsq-solo', label: 'tsq solo -c 8', side: 'tsq', argv: tsqWorker('solo', 8) },
  { name: 'tsq-threads', label: 'tsq threads -c 2', side: 'tsq', argv: tsqWorker('threads', 2) },
  { name: 'tsq-prefork', label: 'tsq prefork -c 2', side: 'tsq', argv: tsqWorker('prefork', 2) },
  { name: 'celery-prefork', label: 'celery prefork -c 2', side: 'celery', argv: celeryWorker('prefork', 2) },
  { name: 'celery-threads', label: 'celery threads -c 8', side: 'celery', argv: celeryWorker('threads', 8) },
  { name: 'celery-solo', label: 'celery solo', side: 'celery', argv: celeryWorker('solo', 1) },
  // What tsq's own claim path drains at the default window with no worker behind it (Redis only).
  {
    name: 'claim-floor',
    label: `claim floor (window ${4 * availableParallelism()})`,
    side: 'floor',
    floorWindow: 4 * availableParallelism(),
  },
  // The default window as two claims on the wire at once: what any claim policy could get from it.
  {
    name: 'claim-floor-2',
    label: `claim floor (window ${4 * availableParallelism()}, 2 claims out)`,
    side: 'floor',
    floorWindow: 4 * availableParallelism(),
    floorInFlight: 2,
  },
  // The same at tsq solo -c 8's window (32), four times the default here: does any window near Celery's reach the target?
  { name: 'claim-floor-c8', label: 'claim floor (window 32)', side: 'floor', floorWindow: 32 },
  // The Node queue tsq is measured against on Redis; its best of three concurrencies is reported.
  ...[8, 50, 100].map((c): Contender => ({ name: `bullmq-${c}`, label: `bullmq Worker -c ${c}`, side: 'bullmq', bullmqConcurrency: c })),
]

/** How long one contender may take to drain the queue before it is timed on what it did. */
const WINDOW_MS = 60_000
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

// ---- broker side: fill, depth, clean up -----------------------------------

function noopMessages(n: number, queue: string): { body: Buffer; headers: Record<string, unknown>; id: string; replyTo: string }[] {
  return Array.from({ length: n }, () => {
    const m = encodeTaskV2('proj.noop', { origin: `gen${process.pid}@${hostname()}` })
    void queue
    return { body: Buffer.from(m.body, 'utf8'), headers: m.headers, id: m.properties.correlationId, replyTo: m.properties.replyTo }
  })
}

interface Broker {
  fill(queue: string, n: number): Promise<void>
  depth(queue: string): Promise<number>
  purge(queue: string): Promise<void>
  remove(queues: string[]): Promise<void>
  close(): Promise<void>
}

async function amqpBroker(): Promise<Broker> {
  const conn = await amqplib.connect(URLS.amqp)
  const ch = await conn.createConfirmChannel()
  const probe = await conn.createChannel()
  return {
    async fill(queue, n) {
      // As Celery declares a task queue, so the worker's own declare matches.
      await ch.assertExchange(queue, 'direct', { durable: true })
      await ch.assertQueue(queue, { durable: true })
      await ch.bindQueue(queue, queue, queue)
      for (const m of noopMessages(n, queue)) {
        const ok = ch.publish('', queue, m.body, {
          contentType: 'application/json',
          contentEncoding: 'utf-8',
          headers: m.headers,
          correlationId: m.id,
          replyTo: m.replyTo,
          deliveryMode: 2,
          priority: 0,
        })
        if (!ok) await new Promise((r) => ch.once('drain', r))
      }
      await ch.waitForConfirms()
    },
    async depth(queue) {
      return (await probe.checkQueue(queue)).messageCount
    },
    async purge(queue) {
      await probe.purgeQueue(queue)
    },
    async remove(queues) {
      for (const q of queues) {
        const c = await conn.createChannel()
        c.on('error', () => undefined)
        await c.deleteQueue(q).catch(() => undefined)
        await c.deleteExchange(q).catch(() => undefined)
        await c.close().catch(() => undefined)
      }
    },
    async close() {
      await conn.close()
    },
  }
}

async function redisBroker(): Promise<Broker> {
  const redis = new Redis(URLS.redis)
  return {
    async fill(queue, n) {
      const all = noopMessages(n, queue)
      for (let i = 0; i < all.length; i += 1000) {
        const pipe = redis.pipeline()
        for (const m of all.slice(i, i + 1000)) {
          // kombu's envelope (spec §4.2).
          const envelope = {
            body: m.body.toString('base64'),
            'content-encoding': 'utf-8',
            'content-type': 'application/json',
            headers: m.headers,
            properties: {
              correlation_id: m.id,
              reply_to: m.replyTo,
              delivery_mode: 2,
              delivery_info: { exchange: '', routing_key: queue },
              priority: 0,
              body_encoding: 'base64',
              delivery_tag: randomUUID(),
            },
          }
          pipe.lpush(queue, JSON.stringify(envelope))
        }
        await pipe.exec()
      }
    },
    async depth(queue) {
      return redis.llen(queue)
    },
    async purge(queue) {
      await redis.del(queue)
    },
    async remove(queues) {
      const keys = queues.flatMap((q) => [q, `${q}\x06\x163`, `${q}\x06\x166`, `${q}\x06\x169`, `_kombu.binding.${q}`])
      if (keys.length) await redis.del(...keys)
    },
    async close() {
      redis.disconnect()
    },
  }
}

// ---- the plain consumers (the broker's limit) ------------------------------

async function rawAmqp(queue: string, n: number): Promise<number> {
  const conn = await amqplib.connect(URLS.amqp)
  try {
    const ch = await conn.createChannel()
    await ch.prefetch(rawPrefetch())
    let got = 0
    let start = 0
    let end = 0
    await new Promise<void>((done) => {
      void ch.consume(queue, (msg) => {
        if (!msg) return
        if (got === 0) start = performance.now()
        JSON.parse(msg.content.toString('utf8'))
        ch.ack(msg)
        got += 1
        if (got === n) {
          end = performance.now()
          done()
        }
      })
    })
    return ((n - 1) * 1000) / (end - start)
  } finally {
    await conn.close()
  }
}

/** BRPOP + kombu's unacked bookkeeping (hset/zadd, then hdel/zrem at ack), 4 loops. */
async function rawRedis(queue: string, n: number): Promise<number> {
  const loops = 4
  const clients = Array.from({ length: loops }, () => new Redis(URLS.redis))
  let got = 0
  let start = 0
  try {
    await Promise.all(
      clients.map(async (r) => {
        const unacked = `tsq-bench-unacked-${process.pid}`
        while (got < n) {
          const res = await r.brpop(queue, 1)
          if (!res) continue
          if (got === 0) start = performance.now()
          const tag = randomUUID()
          await r
            .multi()
            .zadd(`${unacked}_index`, Date.now() / 1000, tag)
            .hset(unacked, tag, res[1])
            .exec()
          const env = JSON.parse(res[1]) as { body: string }
          JSON.parse(Buffer.from(env.body, 'base64').toString('utf8'))
          await r.multi().zrem(`${unacked}_index`, tag).hdel(unacked, tag).exec()
          got += 1
        }
      }),
    )
    return ((n - 1) * 1000) / (performance.now() - start)
  } finally {
    for (const r of clients) r.disconnect()
  }
}

/**
 * The ceiling of tsq solo at its default concurrency: tsq's own UnackedStore
 * claims (the worker's script and key layout) at the default window (Celery's
 * prefetch, 4 × the CPU count), one claim out at a time as the worker sends
 * them when the window is that small, each message's envelope and body
 * JSON-decoded and its ack riding in the next claim. No request, pool or task:
 * what the worker adds per task is the distance between this and tsq solo.
 * `inFlight` > 1 splits the window into that many claims on the wire at once
 * (never more messages held than the window), so Redis runs one claim while
 * the consumer reads the last: the most the window allows with any claim policy.
 */
async function claimFloor(queue: string, n: number, window: number, inFlight = 1): Promise<number> {
  const redis = new Redis(URLS.redis)
  const keys = new RedisKeys(0)
  const store = new UnackedStore(redis, async () => [], keys)
  const lists = keys.lists(queue)
  const perClaim = Math.max(1, Math.floor(window / inFlight))
  let got = 0
  let start = 0
  let drained = false
  const claimer = async (): Promise<void> => {
    while (!drained) {
      const batch = await store.claim(
        lists,
        lists.map(() => true),
        perClaim,
      )
      if (batch.length === 0) {
        drained = true
        break
      }
      if (got === 0) start = performance.now()
      for (const m of batch) {
        const env = JSON.parse(m.raw) as { body: string; properties: { delivery_tag: string } }
        JSON.parse(Buffer.from(env.body, 'base64').toString('utf8'))
        // Queued, not awaited: the next claim carries it, as the worker's acks ride.
        void store.remove(env.properties.delivery_tag)
        got += 1
      }
    }
  }
  try {
    await Promise.all(Array.from({ length: inFlight }, claimer))
    // The last batch's acks go out on their own at the turn's end.
    await new Promise((r) => setImmediate(r))
    await redis.ping()
    return ((got - 1) * 1000) / (performance.now() - start)
  } finally {
    redis.disconnect()
  }
}

// ---- worker processes ------------------------------------------------------

/** pid and all its descendants (pool children). */
function processTree(root: number): number[] {
  const parent = new Map<number, number>()
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8')
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]))
    } catch {
      /* gone */
    }
  }
  const tree = new Set([root])
  for (let grew = true; grew;) {
    grew = false
    for (const [pid, ppid] of parent)
      if (tree.has(ppid) && !tree.has(pid)) {
        tree.add(pid)
        grew = true
      }
  }
  return [...tree]
}

/**
 * A /proc figure in kB (`field` of `/proc/<pid>/<file>`) summed over pid and
 * all its descendants, in MiB. A process that is gone or a zombie counts 0;
 * null when no process gives the field (a kernel without it).
 */
function treeSumMb(root: number, file: string, field: string): number | null {
  const pattern = new RegExp(`${field}:\\s+(\\d+)`)
  let kb: number | null = null
  for (const pid of processTree(root)) {
    let m: RegExpExecArray | null
    try {
      m = pattern.exec(readFileSync(`/proc/${pid}/${file}`, 'utf8'))
    } catch {
      continue
    }
    if (m) kb = (kb ?? 0) + Number(m[1])
  }
  return kb === null ? null : kb / 1024
}

/** RSS in MiB of pid and all its descendants. */
function treeRssMb(root: number): number {
  return treeSumMb(root, 'status', 'VmRSS') ?? 0
}

/**
 * The anonymous memory of pid and all its descendants in MiB: heap, stacks,
 * and what a fork shares copy-on-write counted once (Pss_Anon). RSS also
 * counts, in every process, each page it maps of the runtime's binary and
 * libraries: ~40 MB of node's per process against a few MB of Python's, the
 * same for any program the runtime runs.
 */
function treeAnonMb(root: number): number | null {
  return treeSumMb(root, 'smaps_rollup', 'Pss_Anon')
}

/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these ticks on every mainstream architecture. */
const TICKS_PER_SECOND = 100

/** CPU seconds (user + system) the processes have used so far. */
function cpuSeconds(pids: readonly number[]): number {
  let ticks = 0
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
      ticks += Number(fields[11]) + Number(fields[12])
    } catch {
      /* gone */
    }
  }
  return ticks / TICKS_PER_SECOND
}

const redisPort = new URL(URLS.redis).port || '6379'

/** The broker's server processes on this machine (RabbitMQ's Erlang VM, redis-server). */
function brokerPids(kind: Kind): number[] {
  const comm = kind === 'amqp' ? 'beam.smp' : 'redis-server'
  const pids: number[] = []
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      if (readFileSync(`/proc/${d}/comm`, 'utf8').trim() !== comm) continue
      // Several redis-servers may run on a shared machine: the one on the bench's port (its title ends in :PORT).
      if (kind === 'redis' && !readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(`:${redisPort}`)) continue
      pids.push(Number(d))
    } catch {
      /* gone */
    }
  }
  return pids
}

function tsqCli(args: string[], timeoutMs = 30_000): Promise<number | null> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [TSQ_BIN, ...args], { cwd: ROOT, stdio: 'ignore', env: { ...process.env, NO_COLOR: '1' } })
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.once('close', (code) => {
      clearTimeout(timer)
      done(code)
    })
  })
}

async function stopWorker(child: ChildProcess): Promise<void> {
  const pid = child.pid as number
  const exited = new Promise((r) => child.once('exit', r))
  if (child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(pid, 'SIGTERM')
    } catch {
      /* gone */
    }
    await Promise.race([exited, sleep(15_000)])
  }
  try {
    process.kill(-pid, 'SIGKILL')
  } catch {
    /* group gone */
  }
}

/**
 * Waits until the broker server has been nearly idle for a moment (bounded).
 * RabbitMQ keeps working after a burst (writing the message store's index,
 * compacting files that the last drain emptied), and a contender timed while it
 * does pays up to twice the broker CPU per task; every contender, ours and the
 * peers', starts on a quiet broker instead.
 */
async function brokerQuiet(pids: readonly number[], maxMs = 30_000): Promise<void> {
  const intervalMs = 250
  const quietShare = 0.05
  const deadline = Date.now() + maxMs
  let quietIntervals = 0
  let before = cpuSeconds(pids)
  while (quietIntervals < 2 && Date.now() < deadline) {
    await sleep(intervalMs)
    const now = cpuSeconds(pids)
    quietIntervals = now - before <= (quietShare * intervalMs) / 1000 ? quietIntervals + 1 : 0
    before = now
  }
}

interface Result {
  broker: Kind
  name: string
  label: string
  side: Contender['side']
  perSecond: number
  /** Timed over the window on part of the queue: the contender did not drain it. */
  partial?: boolean
  rssIdleMb: number | null
  rssAfterMb: number | null
  anonIdleMb: number | null
  anonAfterMb: number | null
  /** Every round's rate, when --runs asked for more than one (this result is the median round). */
  rounds?: number[]
  /** CPU milliseconds per 1,000 tasks while draining: the consumer's (whole tree) and the broker server's. */
  cpuPerThousand: { consumerMs: number; brokerMs: number }
}

/** Consumer and broker CPU over a drain of `tasks` messages, from two snapshots. */
function cpuPerThousand(tasks: number, consumer: [number, number], broker: [number, number]): Result['cpuPerThousand'] {
  const per = (from: number, to: number) => ((to - from) * 1e6) / Math.max(tasks, 1)
  return { consumerMs: per(...consumer), brokerMs: per(...broker) }
}

/**
 * BullMQ's own Worker in this process (as the plain consumers run), on a queue
 * pre-filled with `addBulk`: jobs completed per second, from the first
 * completion to the n-th, with BullMQ's defaults (completed jobs kept).
 */
async function bullmqDrain(c: Contender, n: number): Promise<Result> {
  const name = `tsq-bench-tp-${process.pid}-${c.name}`
  const connection = new Redis(URLS.redis, { maxRetriesPerRequest: null })
  const queue = new BullQueue(name, { connection })
  let worker: BullWorker | undefined
  // BullMQ does not close a connection it was handed: left open, it kept the bench from exiting.
  const workerConnection = new Redis(URLS.redis, { maxRetriesPerRequest: null })
  try {
    for (let i = 0; i < n; i += 1000)
      await queue.addBulk(Array.from({ length: Math.min(1000, n - i) }, (_, j) => ({ name: 'proj.noop', data: { args: [i + j] } })))
    const brokerServer = brokerPids('redis')
    await brokerQuiet(brokerServer)
    const ownCpu = () => {
      const { user, system } = process.cpuUsage()
      return (user + system) / 1e6
    }
    const before: [number, number] = [ownCpu(), cpuSeconds(brokerServer)]
    let done = 0
    let start = 0
    const perSecond = await new Promise<number>((resolvePromise) => {
      worker = new BullWorker(name, async () => undefined, { connection: workerConnection, concurrency: c.bullmqConcurrency })
      worker.on('completed', () => {
        done += 1
        if (done === 1) start = performance.now()
        if (done === n) resolvePromise(((n - 1) * 1000) / (performance.now() - start))
      })
    })
    const cpu = cpuPerThousand(n, [before[0], ownCpu()], [before[1], cpuSeconds(brokerServer)])
    return {
      broker: 'redis',
      name: c.name,
      label: c.label,
      side: c.side,
      perSecond,
      rssIdleMb: null,
      rssAfterMb: null,
      anonIdleMb: null,
      anonAfterMb: null,
      cpuPerThousand: cpu,
    }
  } finally {
    await worker?.close()
    await queue.obliterate({ force: true }).catch(() => undefined)
    await queue.close()
    connection.disconnect()
    workerConnection.disconnect()
  }
}

/**
 * A worker process drains `count` tasks from `queue`, untimed; a slow one
 * (Celery's threads and solo pools on RabbitMQ) has the rest purged after
 * WARMUP_MS.
 */
async function warmUp(broker: Broker, queue: string, count: number, child: ChildProcess): Promise<void> {
  await broker.fill(queue, count)
  const deadline = Date.now() + WARMUP_MS
  while ((await broker.depth(queue)) > 0) {
    if (child.exitCode !== null) throw new Error('the worker exited during its warm-up')
    if (Date.now() > deadline) {
      await broker.purge(queue)
      break
    }
    await sleep(20)
  }
  // What it prefetched last is still running when the queue reads empty.
  await sleep(500)
}

/** How long a worker process's warm-up drain may take before what is left of it is purged. */
const WARMUP_MS = 15_000

/**
 * Untimed bursts a worker process drains before the timed one. V8 is still
 * compiling a tsq worker's hot path in its second burst: 20,000-task bursts
 * into one solo worker on Redis drained at 13.4k, 23.7k, then 28-34k tasks/s
 * from the third on; in another run (with --trace-opt) 18.3k, 31.7k, 32.5k,
 * V8 optimising 266 functions in the first burst, 28 in the second and 1 in
 * the third. With one burst of warm-up the timed drain was a second burst.
 *
 * The bursts come after a first cancel_consumer and add_consumer of the timed
 * queue. Without it, the cancel that follows the bursts was the worker's first:
 * V8's log (--log-deopt) showed it deoptimising the tsq worker's claim path (most
 * likely the consumer's `cancelled` field, never written again until then, no
 * longer a constant: "dependency-change" in `room`, `ready`, `topUp`, `onPopped` and the
 * loop), and the control messages' envelopes, of another shape than a task's,
 * deoptimising `makeDelivery` ("wrong map"). The timed drain then began on
 * unoptimised code: its first 200-600 tasks cost the worker 75-120 us each,
 * against 17-25 from then on. A worker pays that once in its life, not at the
 * start of every burst, so the bench has it paid before the warm-up.
 */
const WARMUP_BURSTS = 2

/** Celery's add_consumer/cancel_consumer sent from this process, replied to by `node` alone. */
function pointAt(kind: Kind, node: string, method: 'add_consumer' | 'cancel_consumer', queue: string): Promise<unknown> {
  return broadcast(method, { brokerUrl: URLS[kind], arguments: { queue }, destination: [node], timeout: 5, limit: 1 })
}

/**
 * Every contender drains `warmup` tasks, untimed, before the timed drain: a
 * worker runs for hours, and what it does in its first second (V8's JIT
 * compiling the hot path) is not what it does after. Without it the bench
 * compared a fresh tsq process with BullMQ's Worker and the floors, which run
 * in this process, JIT-warm after their first round. A worker process warms
 * up through the queue it is then timed on, consuming the same queues as in
 * the timed drain, so that the timed drain runs no path the warm-up did not.
 */
async function runContender(kind: Kind, broker: Broker, c: Contender, n: number, warm = warmup): Promise<Result> {
  // In this process: a first, discarded drain of the same kind.
  if (warm > 0 && !c.argv) await runContender(kind, broker, c, warm, 0)
  if (c.side === 'bullmq') return bullmqDrain(c, n)
  if (c.side === 'floor' && kind !== 'redis') throw new Error('Redis only')
  const queue = `tsq-bench-tp-${process.pid}-${c.name}-${kind}`
  const idleQueue = `${queue}-idle`
  await broker.remove([queue, idleQueue])
  // A worker process is warmed up through the queue first, and filled after.
  if (!c.argv) await broker.fill(queue, n)
  try {
    const brokerServer = brokerPids(kind)
    if (!c.argv) {
      await brokerQuiet(brokerServer)
      const ownCpu = () => {
        const { user, system } = process.cpuUsage()
        return (user + system) / 1e6
      }
      const before = [ownCpu(), cpuSeconds(brokerServer)]
      const perSecond =
        c.side === 'floor'
          ? await claimFloor(queue, n, c.floorWindow!, c.floorInFlight)
          : kind === 'amqp'
            ? await rawAmqp(queue, n)
            : await rawRedis(queue, n)
      const cpu = cpuPerThousand(n, [before[0], ownCpu()], [before[1], cpuSeconds(brokerServer)])
      return {
        broker: kind,
        name: c.name,
        label: c.label,
        side: c.side,
        perSecond,
        rssIdleMb: null,
        rssAfterMb: null,
        anonIdleMb: null,
        anonAfterMb: null,
        cpuPerThousand: cpu,
      }
    }
    const node = `bench-${c.name}-${process.pid}@${hostname()}`
    const spec = c.argv(kind, node, idleQueue)
    const child = spawn(spec.cmd, spec.args, { cwd: spec.cwd, env: spec.env, stdio: ['ignore', 'ignore', 'pipe'], detached: true })
    let stderr = ''
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4000)))
    try {
      const deadline = Date.now() + 60_000
      while ((await tsqCli(['inspect', 'ping', '-d', node, '-b', URLS[kind], '-t', '2', '--json'])) !== 0) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${c.label} did not start: ${stderr}`)
      }
      await sleep(1000)
      const rssIdleMb = treeRssMb(child.pid as number)
      const anonIdleMb = treeAnonMb(child.pid as number)
      if (warm > 0) {
        await pointAt(kind, node, 'add_consumer', queue)
        // One cancel_consumer and add_consumer before the bursts, not only after them: the process's first
        // cancel and its first control messages undo some of what V8 compiled for the hot path (below).
        await pointAt(kind, node, 'cancel_consumer', queue)
        await pointAt(kind, node, 'add_consumer', queue)
        for (let burst = 0; burst < WARMUP_BURSTS; burst += 1) await warmUp(broker, queue, warm, child)
        await pointAt(kind, node, 'cancel_consumer', queue)
      }
      await broker.fill(queue, n)
      await brokerQuiet(brokerServer)
      // A worker that kept taking from the queue after cancel_consumer replied would be timed on less than n.
      const before = await broker.depth(queue)
      if (before !== n) throw new Error(`${c.label} took ${n - before} messages from ${queue} after cancel_consumer`)
      // From this process, not a CLI process of its own, whose start-up and exit overlapped the drain's start.
      const added = pointAt(kind, node, 'add_consumer', queue)
      // Poll the depth: the clock starts at the first message taken.
      let start = 0
      let startDepth = n
      let end = 0
      let endDepth = 0
      // A contender that has not drained the queue after the window is timed
      // on what it did drain (Celery 5.2.6's threads and solo pools crawl on
      // RabbitMQ here), so one slow peer cannot stall the whole run.
      const startBy = Date.now() + 60_000
      let window = Infinity
      let workerTree: number[] = []
      let cpuAtStart: [number, number] = [0, 0]
      for (;;) {
        const d = await broker.depth(queue)
        const now = performance.now()
        if (!start && d < n) {
          start = now
          startDepth = d
          window = Date.now() + WINDOW_MS
          workerTree = processTree(child.pid as number)
          cpuAtStart = [cpuSeconds(workerTree), cpuSeconds(brokerServer)]
        }
        if (start && (d === 0 || Date.now() > window)) {
          end = now
          endDepth = d
          break
        }
        if ((!start && Date.now() > startBy) || child.exitCode !== null)
          throw new Error(`${c.label} did not start draining the queue (depth ${d}): ${stderr}`)
        await sleep(start ? 10 : 5)
      }
      // The last prefetched tasks are still finishing when the queue reads empty.
      await sleep(200)
      const cpu = cpuPerThousand(startDepth - endDepth, [cpuAtStart[0], cpuSeconds(workerTree)], [cpuAtStart[1], cpuSeconds(brokerServer)])
      await added
      await sleep(800)
      const rssAfterMb = treeRssMb(child.pid as number)
      const anonAfterMb = treeAnonMb(child.pid as number)
      const perSecond = ((startDepth - endDepth) * 1000) / (end - start)
      return {
        broker: kind,
        name: c.name,
        label: c.label,
        side: c.side,
        perSecond,
        partial: endDepth > 0,
        rssIdleMb,
        rssAfterMb,
        anonIdleMb,
        anonAfterMb,
        cpuPerThousand: cpu,
      }
    } finally {
      await stopWorker(child)
    }
  } finally {
    await broker.remove([queue, idleQueue])
  }
}

// ---- main ------------------------------------------------------------------

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '20000' },
    broker: { type: 'string', multiple: true },
    only: { type: 'string' },
    json: { type: 'boolean', default: false },
    'node-arg': { type: 'string', multiple: true },
    'tsq-arg': { type: 'string', multiple: true },
    'celery-arg': { type: 'string', multiple: true },
    'raw-prefetch': { type: 'string', default: '32' },
    runs: { type: 'string', default: '1' },
    warmup: { type: 'string', default: '30000' },
  },
})
const n = Number(values.tasks)
const runs = Number(values.runs)
const warmup = Number(values.warmup)
if (!(Number.isInteger(warmup) && warmup >= 0)) throw new Error('--warmup must be a whole number >= 0')
if (!(Number.isInteger(runs) && runs >= 1)) throw new Error('--runs must be a whole number >= 1')
const kinds = (values.broker ?? ['amqp', 'redis']) as Kind[]
const only = values.only ? new Set(values.only.split(',')) : null
const contenders = CONTENDERS.filter((c) => !only || only.has(c.name))
const say = (line: string) => (values.json ? process.stderr : process.stdout).write(`${line}\n`)
const env = benchEnv(PYTHON)
say(`# worker-throughput  ${formatEnv(env)}  tasks=${n}`)

const results: Result[] = []
for (const kind of kinds) {
  let broker: Broker
  try {
    broker = kind === 'amqp' ? await amqpBroker() : await redisBroker()
  } catch (error) {
    say(`${kind}: broker not reachable on 127.0.0.1, skipped (${(error as Error).message})`)
    continue
  }
  try {
    // Rounds go through every contender in turn, so drift in the broker's
    // state over the session falls on all of them alike; each is then
    // reported by its median round (a contender too slow to drain runs once).
    const rounds = new Map<string, Result[]>()
    for (let round = 0; round < runs; round += 1) {
      for (const c of contenders) {
        if ((c.side === 'bullmq' || c.side === 'floor') && kind !== 'redis') continue
        const done = rounds.get(c.name) ?? []
        if (round > 0 && (done.length === 0 || done.some((r) => r.partial))) continue
        try {
          const r = await runContender(kind, broker, c, n)
          rounds.set(c.name, [...done, r])
          if (runs > 1)
            say(
              `${kind}  ${c.label.padEnd(22)} round ${round + 1}: ${r.perSecond.toFixed(0)} tasks/s  cpu/1k tasks: consumer=${r.cpuPerThousand.consumerMs.toFixed(0)}ms broker=${r.cpuPerThousand.brokerMs.toFixed(0)}ms`,
            )
        } catch (error) {
          say(`${kind}  ${c.label.padEnd(22)} FAILED: ${(error as Error).message.split('\n')[0]}`)
        }
      }
    }
    for (const c of contenders) {
      const all = rounds.get(c.name)
      if (!all) continue
      const byRate = [...all].sort((a, b) => a.perSecond - b.perSecond)
      const r = { ...byRate[(byRate.length - 1) >> 1]!, rounds: all.map((x) => Math.round(x.perSecond)) }
      results.push(r)
      const anon = r.anonIdleMb === null ? '' : `  anon idle=${r.anonIdleMb.toFixed(1)}MB after=${(r.anonAfterMb ?? 0).toFixed(1)}MB`
      const rss = r.rssIdleMb === null ? '' : `  rss idle=${r.rssIdleMb.toFixed(1)}MB after=${(r.rssAfterMb ?? 0).toFixed(1)}MB${anon}`
      const cpu = `  cpu/1k tasks: consumer=${r.cpuPerThousand.consumerMs.toFixed(0)}ms broker=${r.cpuPerThousand.brokerMs.toFixed(0)}ms`
      const spread = all.length > 1 ? `  (median of ${all.length}: ${byRate.map((x) => x.perSecond.toFixed(0)).join(', ')})` : ''
      say(
        `${kind}  ${r.label.padEnd(22)} ${r.perSecond.toFixed(0).padStart(7)} tasks/s${spread}${cpu}${rss}${r.partial ? `  (partial: did not drain ${n} within ${WINDOW_MS / 1000} s)` : ''}`,
      )
    }
  } finally {
    await broker.close()
  }
  const mine = results.filter((r) => r.broker === kind)
  const best = (side: Result['side']) => mine.filter((r) => r.side === side).sort((a, b) => b.perSecond - a.perSecond)[0]
  const [t, p, raw] = [best('tsq'), best('celery'), best('raw')]
  // Printed whether or not Celery ran (--only tsq-solo-default,bullmq-8,bullmq-50,bullmq-100).
  const bull = best('bullmq')
  const solo = mine.find((r) => r.name === 'tsq-solo-default')
  if (bull && solo)
    say(
      `worker-throughput-bullmq-${kind}  tsq=${solo.perSecond.toFixed(0)}/s (${solo.label}, the default concurrency)  peer=${bull.perSecond.toFixed(0)}/s (${bull.label}, BullMQ's best)  ratio=${(solo.perSecond / bull.perSecond).toFixed(2)} (target >= 1.5)`,
    )
  // Round by round, tsq against BullMQ's best concurrency of the same round: the two ran a few
  // seconds apart, so a slow spell of a shared machine falls on both more often than in the medians.
  const bullRounds = mine.filter((r) => r.side === 'bullmq' && r.rounds).map((r) => r.rounds!)
  if (solo?.rounds && bullRounds.length > 0 && solo.rounds.length > 1) {
    const paired = solo.rounds.flatMap((t, i) => {
      const peer = Math.max(...bullRounds.map((rs) => rs[i] ?? 0))
      return peer > 0 ? [t / peer] : []
    })
    const sorted = [...paired].sort((a, b) => a - b)
    say(
      `worker-throughput-bullmq-${kind}-rounds  ratio by round=${paired.map((x) => x.toFixed(2)).join(', ')}  median=${sorted[(sorted.length - 1) >> 1]!.toFixed(2)}`,
    )
  }
  // How far the default window itself allows: the claim path alone against BullMQ, and tsq's share of it.
  // Each floor beside the tsq worker that claims at its window.
  for (const [floorName, workerName] of [
    ['claim-floor', 'tsq-solo-default'],
    ['claim-floor-2', 'tsq-solo-default'],
    ['claim-floor-c8', 'tsq-solo'],
  ] as const) {
    const floor = mine.find((r) => r.name === floorName)
    const worker = mine.find((r) => r.name === workerName)
    if (!floor || !(bull || worker)) continue
    const vsBull = bull ? `  floor/bullmq=${(floor.perSecond / bull.perSecond).toFixed(2)}` : ''
    const share = worker ? `  tsq/floor=${((100 * worker.perSecond) / floor.perSecond).toFixed(0)}% (${worker.label})` : ''
    say(`worker-throughput-${floorName}-${kind}  floor=${floor.perSecond.toFixed(0)}/s (${floor.label})${vsBull}${share}`)
  }
  if (t && p) {
    const rawPart = raw
      ? `  raw=${raw.perSecond.toFixed(0)}/s  tsq/raw=${((100 * t.perSecond) / raw.perSecond).toFixed(0)}% (target >= 50%)`
      : ''
    say(
      `worker-throughput-${kind}  tsq=${t.perSecond.toFixed(0)}/s (${t.label})  peer=${p.perSecond.toFixed(0)}/s (${p.label})  ratio=${(t.perSecond / p.perSecond).toFixed(2)} (target >= 5)${rawPart}`,
    )
    // The pools that isolate tasks (prefork is the default), each against Celery's best pool of the same run.
    for (const name of ['tsq-prefork', 'tsq-threads']) {
      const pool = mine.find((r) => r.name === name)
      if (pool)
        say(
          `worker-throughput-${name.slice(4)}-${kind}  tsq=${pool.perSecond.toFixed(0)}/s (${pool.label})  peer=${p.perSecond.toFixed(0)}/s (${p.label}, Celery's best)  ratio=${(pool.perSecond / p.perSecond).toFixed(2)} (target >= 1.5)`,
        )
    }
    const rssOf = (side: Result['side']) => mine.filter((r) => r.side === side && r.rssAfterMb !== null)
    const maxRss = (rs: Result[]) => Math.max(...rs.map((r) => Math.max(r.rssIdleMb ?? 0, r.rssAfterMb ?? 0)))
    const minRss = (rs: Result[]) => Math.min(...rs.map((r) => Math.max(r.rssIdleMb ?? 0, r.rssAfterMb ?? 0)))
    say(
      `worker-rss-${kind}  tsq best-pool=${Math.max(t.rssIdleMb ?? 0, t.rssAfterMb ?? 0).toFixed(1)}MB (all pools ${minRss(rssOf('tsq')).toFixed(1)}-${maxRss(rssOf('tsq')).toFixed(1)}MB)  celery=${minRss(rssOf('celery')).toFixed(1)}-${maxRss(rssOf('celery')).toFixed(1)}MB`,
    )
    // Pool for pool, the larger of idle and after, RSS then anonymous memory.
    const poolOf = (r: Result) => r.name.replace(/^(tsq|celery)-/, '')
    const peak = (idle: number | null, after: number | null) => (idle === null ? '?' : `${Math.max(idle, after ?? 0).toFixed(1)}MB`)
    for (const pool of ['solo', 'threads', 'prefork']) {
      const [ours, theirs] = [
        mine.find((r) => r.side === 'tsq' && poolOf(r) === pool),
        mine.find((r) => r.side === 'celery' && poolOf(r) === pool),
      ]
      if (!ours || !theirs) continue
      say(
        `worker-memory-${kind}  ${pool.padEnd(8)} rss: tsq=${peak(ours.rssIdleMb, ours.rssAfterMb)} celery=${peak(theirs.rssIdleMb, theirs.rssAfterMb)}  anon: tsq=${peak(ours.anonIdleMb, ours.anonAfterMb)} celery=${peak(theirs.anonIdleMb, theirs.anonAfterMb)}`,
      )
    }
  }
}
if (values.json) process.stdout.write(`${JSON.stringify({ env, tasks: n, results })}\n`)
