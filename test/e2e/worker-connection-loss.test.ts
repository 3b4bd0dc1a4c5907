// tsq-test: slow 2
// On RabbitMQ, a worker that loses its connection while it holds
// tasks must not run them twice. Before the fix it ran its in-memory copies
// (reserved, ETA-waiting, rate-limit-waiting) and then the broker's
// redeliveries of the same messages. Now it drops what it held from the
// closed channel at once, never starts a copy whose delivery is gone, and
// settles the redelivery of a task that still runs (or ended) on the closed
// channel with that run's outcome instead of running it again.
//
// One worker per pool (solo, threads, prefork; -c 2), each on its own durable
// queue, all at once. For each of two losses every worker gets persistent
// tasks with known ids: countdown tasks (held in memory until their ETA),
// rate-limited ones (closs.limited, 2/s) and 2 s ones (closs.work), more than
// the pool runs, so that it has tasks running, reserved, rate-limit-waiting
// and waiting for an ETA; one more of each kind a second keeps it so until it
// notices the loss (rabbitmqctl can take seconds to act on a busy machine).
// The first loss is a forced close of each worker's connections (rabbitmqctl
// close_connection), the second a RabbitMQ restart (stop_app, start_app: the
// queues are durable and the messages persistent, so they survive it), on a
// RabbitMQ node of the test's own, so the shared broker and the tests beside
// it in other lanes keep their connections. Then,
// per worker:
// - every task ran;
// - a task ran twice only if it was running at a loss: started \ done, read
//   as soon as the worker logs the loss (it starts nothing new before it has
//   reconnected);
// - each countdown task ran once, and not before its ETA;
// - the worker said it dropped held tasks at each loss, is still up, and
//   exits 0 on SIGTERM.
// It takes about 30 s (two minutes on a loaded machine).
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { connect as netConnect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { sendTask } from '../../src/client/send-task.js'
import { createTransport, type Transport } from '../../src/transport/index.js'
import { brokerSkipReason, REDIS_URL, uniqueName, waitFor } from '../helpers/brokers.js'
import { BIN, ROOT } from '../helpers/cli.js'
import { clusterSkipReason, startRabbitCluster, type RabbitCluster, type RabbitNode } from '../helpers/rabbit-cluster.js'
import { deleteCeleryQueues } from '../interop/helpers/cleanup.js'

const APP = 'test/fixtures/tasks/conn-loss-tasks.js'
const POOLS = ['solo', 'threads', 'prefork'] as const
const CONCURRENCY = 2
const LONG_MS = 2_000
const SHORT_MS = 100
const amqpSkip = (await brokerSkipReason('amqp')) || clusterSkipReason()
const nodeDir = mkdtempSync(join(tmpdir(), 'tsq-closs-rabbit-'))
let cluster: RabbitCluster | undefined
/** The test's own RabbitMQ node, which it closes connections on and restarts. */
let rabbit: RabbitNode
let AMQP_URL = ''

type PoolName = (typeof POOLS)[number]

interface Worker {
  pool: PoolName
  queue: string
  key: string
  child: ChildProcess
  output: () => string
  exited: Promise<number | null>
}

interface Sent {
  id: string
  task: 'closs.work' | 'closs.limited'
  ms: number
  /** For countdown tasks: no earlier than this (ms since the epoch) may it start. */
  notBefore?: number
  /** When its publish began and was confirmed: one that spans a loss may have been published twice by the sender's retry. */
  sentAt: number
  confirmedAt: number
}

const children: ChildProcess[] = []
const cleanups: Array<() => Promise<void>> = []

const spawned: Worker[] = []

after(async () => {
  // TSQ_TEST_LOG_DIR=<dir> keeps each worker's log there, to read after a failure.
  const dir = process.env.TSQ_TEST_LOG_DIR
  if (dir) for (const w of spawned) writeFileSync(join(dir, `closs-${w.pool}-${w.child.pid}.log`), w.output())
  for (const child of children) killGroup(child, 'SIGKILL')
  for (const c of cleanups.splice(0)) await c().catch(() => undefined)
  await cluster?.stop()
  rmSync(nodeDir, { recursive: true, force: true })
})

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    // detached: the worker leads its own process group, so this reaches its pool processes too.
    process.kill(-child.pid!, signal)
  } catch {
    // Already gone.
  }
}

async function spawnWorker(pool: PoolName): Promise<Worker> {
  const queue = uniqueName(`tsq-closs-${pool}`)
  const key = uniqueName(`tsq-closs-key-${pool}`)
  const node = `${uniqueName(`closs-${pool}`)}@testhost`
  const args = [
    'worker',
    '-A',
    APP,
    '-n',
    node,
    '-P',
    pool,
    '-c',
    String(CONCURRENCY),
    '-Q',
    queue,
    '-l',
    'INFO',
    '--without-mingle',
    '--without-gossip',
    '--without-heartbeat',
  ]
  const env = {
    ...process.env,
    TSQ_BROKER_URL: AMQP_URL,
    CELERY_BROKER_URL: '',
    TSQ_RESULT_BACKEND: '',
    CELERY_RESULT_BACKEND: '',
    TSQ_LOSS_REDIS_URL: REDIS_URL,
  }
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  children.push(child)
  let output = ''
  child.stdout!.on('data', (d) => (output += d))
  child.stderr!.on('data', (d) => (output += d))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  await waitFor(() => output.includes(`${node} ready.`) || child.exitCode !== null, { timeoutMs: 30_000, what: `${node} ready` })
  assert.equal(child.exitCode, null, `${pool} worker exited early:\n${output}`)
  const worker = { pool, queue, key, child, output: () => output, exited }
  spawned.push(worker)
  return worker
}

function count(text: string, needle: string): number {
  return text.split(needle).length - 1
}

/**
 * One worker's tasks for one loss, published persistent with known ids on a
 * confirming transport: a batch first, then, until the worker notices the
 * loss, one of each kind a second (rabbitmqctl may take seconds to act on a
 * busy machine, and the worker must still hold tasks of every kind when it
 * does). A task counts as sent once its publish is confirmed.
 */
class Feed {
  readonly sent: Sent[] = []
  private readonly pending = new Set<Promise<void>>()
  private n = 0
  private timer: NodeJS.Timeout | undefined

  private constructor(
    private readonly w: Worker,
    private readonly label: string,
    private readonly countdown: number,
    private readonly transport: Transport,
  ) {}

  static async start(w: Worker, label: string, countdown: number): Promise<Feed> {
    const transport = await createTransport(AMQP_URL)
    await transport.connect()
    const feed = new Feed(w, label, countdown, transport)
    // The countdown ones first, so they are in the worker's window (each widens it by one).
    for (let i = 0; i < 2; i += 1) await feed.send('eta')
    for (let i = 0; i < 4; i += 1) await feed.send('limited')
    for (let i = 0; i < 5; i += 1) await feed.send('long')
    return feed
  }

  private send(kind: 'eta' | 'limited' | 'long'): Promise<void> {
    const { w } = this
    this.n += 1
    const id = `${w.key}-${this.label}-${kind}-${this.n}`
    const task = kind === 'limited' ? 'closs.limited' : 'closs.work'
    const ms = kind === 'long' ? LONG_MS : SHORT_MS
    const notBefore = kind === 'eta' ? Date.now() + this.countdown * 1000 : undefined
    const sentAt = Date.now()
    const sending = sendTask(this.transport, task, {
      id,
      args: [w.key, ms],
      queue: w.queue,
      exchange: w.queue,
      routingKey: w.queue,
      ...(kind === 'eta' ? { countdown: this.countdown } : {}),
    }).then(
      () => void this.sent.push({ id, task, ms, sentAt, confirmedAt: Date.now(), ...(notBefore ? { notBefore } : {}) }),
      () => undefined, // Not confirmed (the broker went down under it): not counted.
    )
    this.pending.add(sending)
    void sending.finally(() => this.pending.delete(sending))
    return sending
  }

  /** One task of each kind a second until stop(). */
  keepFeeding(): void {
    this.timer = setInterval(() => {
      for (const kind of ['eta', 'limited', 'long'] as const) void this.send(kind)
    }, 1_000)
  }

  stop(): void {
    clearInterval(this.timer)
  }

  /** Waits for the publishes still out, then closes the transport. */
  async close(): Promise<void> {
    this.stop()
    await Promise.race([Promise.all([...this.pending]), new Promise((r) => setTimeout(r, 30_000))])
    await Promise.race([this.transport.close().catch(() => undefined), new Promise((r) => setTimeout(r, 5_000))])
  }
}

/** The worker holds what the loss must find: tasks running (the pool is full), and both first countdown tasks received. */
async function holding(redis: Redis, w: Worker, sent: Sent[]): Promise<void> {
  const eta = sent.filter((s) => s.notBefore !== undefined)
  await waitFor(
    async () => {
      if (!eta.every((s) => w.output().includes(`[${s.id}] received`))) return false
      const [startedIds, doneIds] = await Promise.all([redis.smembers(`${w.key}:started`), redis.smembers(`${w.key}:done`)])
      const done = new Set(doneIds)
      return sent.filter((s) => startedIds.includes(s.id) && !done.has(s.id)).length >= CONCURRENCY
    },
    { timeoutMs: 20_000, intervalMs: 20, what: `${w.pool} worker running ${CONCURRENCY} tasks with its countdown tasks held` },
  )
}

/**
 * Triggers a loss and returns, per worker, the ids running at it: started \
 * done, read (atomically) as soon as the worker logs the loss. `noticed` is
 * called for each worker then (its feed stops).
 */
async function loss(
  redis: Redis,
  workers: Worker[],
  trigger: () => Promise<void>,
  noticed: (w: Worker) => void,
): Promise<Map<Worker, Set<string>>> {
  const lostBefore = new Map(workers.map((w) => [w, count(w.output(), 'Connection to broker lost')]))
  const seen = Promise.all(
    workers.map(async (w) => {
      await waitFor(() => count(w.output(), 'Connection to broker lost') > lostBefore.get(w)!, {
        timeoutMs: 90_000,
        intervalMs: 5,
        what: `${w.pool} worker noticing the loss`,
      })
      noticed(w)
      const [[, startedIds], [, doneIds]] = (await redis.multi().smembers(`${w.key}:started`).smembers(`${w.key}:done`).exec()) as [
        [null, string[]],
        [null, string[]],
      ]
      const done = new Set(doneIds)
      return [w, new Set(startedIds.filter((id) => !done.has(id)))] as const
    }),
  )
  await trigger()
  return new Map(await seen)
}

/** The broker's pids of each worker's connections (connection_name is tsq-<pid>-<n>). */
async function connectionsOf(workers: Worker[]): Promise<string[]> {
  const listed = await rabbit.ctl(['list_connections', '-q', '--no-table-headers', 'pid', 'client_properties'])
  const stdout = listed
  const all: string[] = []
  for (const w of workers) {
    const pids = stdout
      .split('\n')
      .filter((line) => line.includes(`"tsq-${w.child.pid}-`))
      .map((line) => line.split('\t')[0]!)
    assert.ok(pids.length > 0, `found the ${w.pool} worker's connections`)
    all.push(...pids)
  }
  return all
}

async function closeConnections(pids: string[]): Promise<void> {
  await Promise.all(pids.map((pid) => rabbit.ctl(['close_connection', pid, 'tsq connection-loss test'])))
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = netConnect({ port, host: '127.0.0.1' })
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(1000, () => done(false))
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}

async function restartRabbitMQ(): Promise<void> {
  await rabbit.ctl(['stop_app'])
  // A moment with the broker down, so the workers' first reconnect attempts fail.
  await new Promise((r) => setTimeout(r, 1_000))
  await rabbit.ctl(['start_app'])
  await waitFor(() => portOpen(rabbit.port), { timeoutMs: 60_000, intervalMs: 200, what: 'RabbitMQ listening again' })
  await waitFor(
    () =>
      rabbit.ctl(['-q', 'status']).then(
        () => true,
        () => false,
      ),
    { timeoutMs: 60_000, intervalMs: 500, what: 'rabbitmqctl status' },
  )
}

async function allRan(redis: Redis, w: Worker, sent: Sent[], what: string): Promise<void> {
  await waitFor(
    async () => {
      const runs = await redis.hgetall(`${w.key}:runs`)
      return sent.every((s) => Number(runs[s.id] ?? 0) >= 1)
    },
    { timeoutMs: 90_000, intervalMs: 100, what: `every task of the ${w.pool} worker run (${what})` },
  )
}

/** The worker's log lines about `ids`, and the ones that date the losses. */
function linesAbout(w: Worker, ids: readonly string[]): string {
  return w
    .output()
    .split('\n')
    .filter((line) => ids.some((id) => line.includes(`[${id}]`)) || /Connection to broker lost|Dropped \d|Connected to/.test(line))
    .join('\n  ')
}

describe('connection loss while a worker holds tasks', { skip: amqpSkip }, () => {
  before(async () => {
    cluster = await startRabbitCluster(nodeDir, 1)
    rabbit = cluster.nodes[0]!
    AMQP_URL = rabbit.url
  })
  it(
    '[RabbitMQ] solo, threads, prefork: forced close and broker restart run nothing twice but what was running',
    { timeout: 240_000 },
    async () => {
      const redis = new Redis(REDIS_URL)
      const workers: Worker[] = []
      const sentBy = new Map<Worker, Sent[]>()
      cleanups.push(async () => {
        await deleteCeleryQueues(
          'amqp',
          AMQP_URL,
          workers.map((w) => w.queue),
        )
        for (const w of workers) {
          const keys = [`${w.key}:started`, `${w.key}:runs`, `${w.key}:done`]
          let cursor = '0'
          do {
            const [next, found] = await redis.scan(cursor, 'MATCH', `${w.key}:at:*`, 'COUNT', 1000)
            cursor = next
            keys.push(...found)
          } while (cursor !== '0')
          await redis.del(...keys)
        }
        await redis.quit()
      })
      for (const pool of POOLS) workers.push(await spawnWorker(pool))
      const runningAtLoss = new Map<Worker, Map<string, string>>(workers.map((w) => [w, new Map()]))
      const note = (event: string, running: Map<Worker, Set<string>>) => {
        for (const [w, ids] of running) for (const id of ids) if (!runningAtLoss.get(w)!.has(id)) runningAtLoss.get(w)!.set(id, event)
      }
      const dropped = new Map<Worker, number>(workers.map((w) => [w, 0]))
      // When each worker noticed each loss (this process's clock, a few ms late).
      const notices: Array<{ w: Worker; event: string; at: number }> = []
      /** Why a repeat is not allowed, as far as the times tell: a run that ended just before the worker noticed a loss acked into a closed connection. */
      const why = async (w: Worker, s: Sent): Promise<string> => {
        const firstEnd = Number((await redis.lindex(`${w.key}:at:${s.id}`, 0)) ?? NaN)
        const near = notices
          .filter((n) => n.w === w)
          .map((n) => ({ ...n, before: n.at - firstEnd }))
          .find((n) => n.before >= 0 && n.before < 1_000)
        return near ? `its first run ended ${near.before} ms before the worker noticed the ${near.event}` : 'not running at any loss'
      }
      const events: string[] = []
      /**
       * From each loss's trigger to the last worker noticing it. A publish that
       * spans one was retried by the sender's transport after its reconnect, and
       * the broker may hold it twice (at-least-once publishing): two messages,
       * which no worker can tell from a task sent twice, so such ids may run twice.
       */
      const lossWindows: Array<{ start: number; end: number }> = []
      const publishedTwice = (s: Sent): boolean => lossWindows.some((l) => s.sentAt <= l.end && s.confirmedAt >= l.start)

      const phase = async (
        label: string,
        countdown: number,
        event: string,
        trigger: () => Promise<void>,
        prepare?: () => Promise<void>,
      ) => {
        await prepare?.()
        const feeds = new Map<Worker, Feed>(
          await Promise.all(workers.map(async (w) => [w, await Feed.start(w, label, countdown)] as const)),
        )
        await Promise.all(workers.map((w) => holding(redis, w, feeds.get(w)!.sent)))
        for (const feed of feeds.values()) feed.keepFeeding()
        const t0 = Date.now()
        const lag = new Map<Worker, number>()
        let running: Map<Worker, Set<string>>
        try {
          running = await loss(redis, workers, trigger, (w) => {
            feeds.get(w)!.stop()
            lag.set(w, Date.now() - t0)
            notices.push({ w, event, at: Date.now() })
          })
        } finally {
          await Promise.all([...feeds.values()].map((feed) => feed.close()))
        }
        lossWindows.push({ start: t0, end: Math.max(Date.now(), ...notices.map((n) => n.at)) })
        for (const [w, feed] of feeds) sentBy.set(w, [...(sentBy.get(w) ?? []), ...feed.sent])
        note(event, running)
        const short = (w: Worker, id: string) => id.slice(w.key.length + 1)
        events.push(
          `${event}: ${workers.map((w) => `${w.pool} noticed after ${((lag.get(w) ?? 0) / 1000).toFixed(1)} s, running [${[...running.get(w)!].map((id) => short(w, id)).join(' ')}]`).join('; ')}`,
        )
        await Promise.all([...feeds].map(([w, feed]) => allRan(redis, w, feed.sent, `after the ${event}`)))
        for (const w of workers) {
          const now = w.output().match(/Dropped \d+ held task/g)?.length ?? 0
          assert.ok(now > dropped.get(w)!, `the ${w.pool} worker dropped the tasks it held at the ${event}:\n  ${linesAbout(w, [])}`)
          dropped.set(w, now)
        }
      }

      // Listed before the tasks go out (rabbitmqctl takes a second or more on a busy machine), so the close comes sooner.
      let pids: string[] = []
      await phase(
        'close',
        7,
        'forced close',
        () => closeConnections(pids),
        async () => {
          pids = await connectionsOf(workers)
        },
      )
      await phase('restart', 8, 'broker restart', restartRabbitMQ)
      // Late repeats would come now, if any: the countdown tasks were the last to run.
      await new Promise((r) => setTimeout(r, 1_000))

      const failures: string[] = []
      for (const w of workers) {
        const sent = sentBy.get(w)!
        const runs = await redis.hgetall(`${w.key}:runs`)
        const never = sent.filter((s) => !runs[s.id])
        if (never.length) failures.push(`${w.pool}: never ran: ${never.map((s) => s.id).join(', ')}`)
        const twice = sent.filter((s) => Number(runs[s.id] ?? 0) > 1)
        const allowed = runningAtLoss.get(w)!
        const forbidden = twice.filter((s) => !allowed.has(s.id) && !publishedTwice(s))
        if (forbidden.length) {
          const reasons = await Promise.all(forbidden.map((s) => why(w, s)))
          failures.push(
            `${w.pool}: ran twice without running at a loss: ${forbidden.map((s, i) => `${s.id} ×${runs[s.id]} (${reasons[i]})`).join(', ')}\n  ${linesAbout(
              w,
              forbidden.map((s) => s.id),
            )}`,
          )
        }
        for (const s of sent.filter((x) => x.notBefore !== undefined)) {
          const ends = (await redis.lrange(`${w.key}:at:${s.id}`, 0, -1)).map(Number)
          if (ends.length !== 1 && !(ends.length === 2 && publishedTwice(s)))
            failures.push(`${w.pool}: countdown task ${s.id} ran ${ends.length} times\n  ${linesAbout(w, [s.id])}`)
          // Its start is its end less its sleep; a few ms of slack for the clocks of two processes.
          const early = ends.filter((end) => end - s.ms < s.notBefore! - 20)
          if (early.length) failures.push(`${w.pool}: countdown task ${s.id} ran ${s.notBefore! - (early[0]! - s.ms)} ms before its ETA`)
        }
        process.stdout.write(
          `# ${w.pool}: ${sent.length} tasks, ${twice.length} ran twice (${twice.map((s) => `${s.id.slice(w.key.length + 1)}: running at the ${allowed.get(s.id) ?? '-'}`).join(', ') || 'none'})\n`,
        )
        if (w.child.exitCode !== null) failures.push(`${w.pool}: the worker exited (${w.child.exitCode}) during the test`)
      }
      process.stdout.write(`# ${events.join('; ')}\n`)
      assert.deepEqual(failures, [])

      for (const w of workers) w.child.kill('SIGTERM')
      for (const w of workers) assert.equal(await w.exited, 0, `${w.pool} worker exit code\n${w.output().slice(-3000)}`)
    },
  )
})
