// tsq-test: exclusive (its repeat allowance is exact: a loaded machine stretches the kill windows)
// No task lost, on RabbitMQ and on Redis: N late-ack tasks through a
// prefork worker that is killed (-9, with its children) twice, warm-stopped,
// cold-stopped and cut off from its broker, restarted each time. Every task
// must finish at least once, and a task may run twice only if it was in
// flight at one of those events: the exact ids, not a bound on their number.
//
// Each run adds its id to `<key>:started` when it starts and to `<key>:done`
// when it ends, and after each event the test reads which were in flight:
// - kill -9: started \ done once the worker has exited, plus the started ones
//   the broker still counted unacked (a pool process may finish a task, and
//   write its done marker, just before the kill takes the main process with
//   the result or its ack not yet sent). The broker says which: RabbitMQ puts
//   them back at the head of the queue marked redelivered (read there with
//   basic.get and put back), Redis keeps them in `unacked`;
// - cold stop: started \ done once the worker has exited, plus the started
//   ones its log shows received and never succeeded (it flushes its acks
//   before it exits, so those are what it gave back: a task that ended in
//   its pool process while the stop restored it);
// - warm stop: nothing (it finishes what it runs and hands back the rest);
// - broker drop: started \ done as soon as the worker logs the loss. A
//   RabbitMQ drop takes back what the channel held; the worker drops its held
//   copies, and a running task's redelivery takes that run's outcome instead
//   of running again (issue 32). A Redis drop keeps the deliveries (acks land
//   after the reconnect), so nothing should repeat from it.
// Every id that ran twice must be in the union of those. On Redis the killed
// workers' held messages come back by the visibility timeout (10 s here);
// those it had not started must still run only once.
// (`inspect active` just before an event is too slow to name them at 2 ms a
// task: hundreds finish while the CLI starts; the markers name them.)
//
// N is 10,000 (TSQ_LOSS_TASKS lowers it), in CI too: one prefork worker
// (-c 4, 2 ms tasks) gets through it in about 25 s on RabbitMQ and 30 s on
// Redis here, five restarts included, well inside the 2.5 minutes per broker
// allowed, and a smaller N would bunch the five events into fewer tasks.
import assert from 'node:assert/strict'
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { sendTask } from '../../src/client/send-task.js'
import { createTransport } from '../../src/transport/index.js'
import { AMQP_URL, brokerSkipReason, REDIS_URL, uniqueName, waitFor } from '../helpers/brokers.js'
import { BIN, ROOT } from '../helpers/cli.js'
import amqplib from '../../src/transport/amqp/amqplib.js'
import { deleteCeleryQueues } from '../interop/helpers/cleanup.js'

const APP = 'test/fixtures/tasks/loss-tasks.js'
const N = Number(process.env.TSQ_LOSS_TASKS ?? 10_000)
const CONCURRENCY = 4
const PREFETCH_MULTIPLIER = 4
const TASK_MS = 2
const amqpSkip = await brokerSkipReason('amqp')
const redisSkip = await brokerSkipReason('redis')
const started: ChildProcess[] = []
const cleanups: Array<() => Promise<void> | void> = []
const workerLogs: Running[] = []
const everyWorker: Array<Running & { kind: string }> = []

after(async () => {
  // TSQ_TEST_LOG_DIR=<dir> keeps each worker's log there, to read after a failure.
  const dir = process.env.TSQ_TEST_LOG_DIR
  if (dir) for (const w of everyWorker) writeFileSync(join(dir, `loss-${w.kind}-${w.child.pid}.log`), w.output())
  for (const child of started) killGroup(child, 'SIGKILL')
  for (const c of cleanups.splice(0)) await c()
})

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    // detached: the worker leads its own process group, so this reaches its pool children too.
    process.kill(-child.pid!, signal)
  } catch {
    // Already gone.
  }
}

interface Running {
  child: ChildProcess
  output: () => string
  exited: Promise<number | null>
}

async function spawnWorker(broker: string, queue: string, node: string): Promise<Running> {
  const args = [
    'worker',
    '-A',
    APP,
    '-n',
    node,
    '-Q',
    queue,
    '-c',
    String(CONCURRENCY),
    '--prefetch-multiplier',
    String(PREFETCH_MULTIPLIER),
    '-l',
    'INFO',
    '--without-heartbeat',
    '--without-mingle',
  ]
  const env = {
    ...process.env,
    TSQ_BROKER_URL: broker,
    CELERY_BROKER_URL: '',
    TSQ_RESULT_BACKEND: '',
    CELERY_RESULT_BACKEND: '',
    TSQ_LOSS_REDIS_URL: REDIS_URL,
  }
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  started.push(child)
  // All of it is kept (a few MB for the whole test), so a repeated task's lines can be shown.
  const chunks: string[] = []
  const keep = (d: Buffer) => void chunks.push(String(d))
  child.stdout!.on('data', keep)
  child.stderr!.on('data', keep)
  const output = () => chunks.join('')
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  await waitFor(() => output().includes(`${node} ready.`) || child.exitCode !== null, { timeoutMs: 30_000, what: `${node} ready` })
  assert.equal(child.exitCode, null, `worker exited early:\n${output()}`)
  const running = { child, output, exited }
  workerLogs.push(running)
  everyWorker.push({ ...running, kind: broker.startsWith('amqp') ? 'amqp' : 'redis' })
  return running
}

/** Worker log lines that date the events around a repeated task's lines. */
const CONTEXT =
  /ready\.|Connection to broker lost|Dropped \d|delivered again|Restoring|Returned \d|shutdown|Shutdown|connected to|Connected to/

/** Every worker's log lines that name one of `ids`, worker by worker (for a failure message). */
function linesAbout(ids: readonly string[]): string {
  return workerLogs
    .map((w, i) => {
      const lines = w
        .output()
        .split('\n')
        .filter((line) => ids.some((id) => line.includes(`[${id}]`)) || CONTEXT.test(line))
      return lines.length ? `worker #${i + 1} (pid ${w.child.pid}):\n  ${lines.join('\n  ')}` : ''
    })
    .filter(Boolean)
    .join('\n')
}

async function dropConnections(kind: 'amqp' | 'redis', pid: number): Promise<number> {
  if (kind === 'amqp') {
    // Not execFileSync: the test watches the worker's log meanwhile.
    const run = promisify(execFile)
    const { stdout } = await run('rabbitmqctl', ['list_connections', '-q', '--no-table-headers', 'pid', 'client_properties'])
    const pids = stdout
      .split('\n')
      .filter((line) => line.includes(`"tsq-${pid}-`))
      .map((line) => line.split('\t')[0]!)
    await Promise.all(pids.map((connPid) => run('rabbitmqctl', ['close_connection', connPid, 'tsq loss test'])))
    return pids.length
  }
  const { Redis } = await import('ioredis')
  const r = new Redis(REDIS_URL)
  try {
    let killed = 0
    for (const line of ((await r.client('LIST')) as string).split('\n')) {
      const id = /\bid=(\d+)/.exec(line)?.[1]
      const name = /\bname=(\S*)/.exec(line)?.[1] ?? ''
      if (id && name.startsWith(`tsq-${pid}-`)) killed += Number(await r.client('KILL', 'ID', id))
    }
    return killed
  } finally {
    await r.quit()
  }
}

/**
 * The ids a worker's log says it received and never finished (no "succeeded"
 * line): after a cold stop (which flushes its acks before it closes) these are
 * exactly the ones it gave back unacknowledged.
 */
function unfinishedIn(w: Running): Set<string> {
  const open = new Set<string>()
  for (const [, id, what] of w.output().matchAll(/Task loss\.work\[([^\]]+)\] (received|succeeded)/g)) {
    if (what === 'received') open.add(id!)
    else open.delete(id!)
  }
  return open
}

/**
 * The ids of the messages a killed worker held unacknowledged, read from the
 * broker (its log cannot say: an ack logged just before the kill may not have
 * left the process). RabbitMQ puts them back at the head of the queue, marked
 * redelivered: they are read there (basic.get) and put back (nack, requeue).
 * Redis keeps them in `unacked` until the visibility timeout restores them.
 */
async function heldUnackedByTheDead(
  kind: 'amqp' | 'redis',
  queue: string,
  redis: { hgetall(key: string): Promise<Record<string, string>> },
): Promise<Set<string>> {
  const ids = new Set<string>()
  if (kind === 'redis') {
    for (const raw of Object.values(await redis.hgetall('unacked'))) {
      const [envelope, , routingKey] = JSON.parse(raw) as [{ headers?: { id?: string } }, string, string]
      if (routingKey === queue && envelope.headers?.id) ids.add(envelope.headers.id)
    }
    return ids
  }
  const conn = await amqplib.connect(AMQP_URL)
  try {
    const ch = await conn.createChannel()
    // The broker requeues a dead consumer's messages when it closes its channel, which also ends the consumer.
    await waitFor(async () => (await ch.checkQueue(queue)).consumerCount === 0, { timeoutMs: 10_000, what: 'the killed consumer gone' })
    await new Promise((r) => setTimeout(r, 200))
    for (let i = 0; i < 10 * CONCURRENCY * (1 + PREFETCH_MULTIPLIER); i += 1) {
      const msg = await ch.get(queue, { noAck: false })
      if (!msg) break
      const id = msg.properties.headers?.id as unknown
      if (msg.fields.redelivered) ids.add(Buffer.isBuffer(id) ? id.toString() : String(id))
      else break
    }
    ch.nackAll(true)
    await ch.close()
  } finally {
    await conn.close()
  }
  return ids
}

/**
 * A restorer killed (or cut off) while it held kombu's `unacked_mutex` leaves
 * it for its 300 s expiry, and nothing is restored meanwhile (kombu does the
 * same). A restore takes milliseconds here, so a mutex set over 20 s ago is
 * stale: the test clears it rather than wait five minutes, and says so.
 */
async function clearStaleUnackedMutex(
  redis: { ttl(key: string): Promise<number>; del(key: string): Promise<number> },
  log: string[],
): Promise<void> {
  const ttl = await redis.ttl('unacked_mutex')
  if (ttl > 0 && ttl < 280 && (await redis.del('unacked_mutex')) > 0) log.push(`stale unacked_mutex cleared (${300 - ttl} s old)`)
}

async function runLossTest(kind: 'amqp' | 'redis'): Promise<void> {
  // A short visibility timeout, so what a killed worker held comes back within the test (kombu's default is an hour).
  const broker = kind === 'amqp' ? AMQP_URL : `${REDIS_URL}?visibility_timeout=10`
  const queue = uniqueName(`tsq-loss-${kind}`)
  const key = uniqueName('tsq-loss-key')
  const { Redis } = await import('ioredis')
  const redis = new Redis(REDIS_URL)
  cleanups.push(async () => {
    await redis.del(`${key}:runs`, `${key}:done`, `${key}:started`)
    if (kind === 'redis')
      await redis.del(queue, `_kombu.binding.${queue}`, ...[1, 2, 3, 4, 5, 6, 7, 8, 9].map((p) => `${queue}\x06\x16${p}`))
    else await deleteCeleryQueues('amqp', AMQP_URL, [queue])
    await redis.quit()
  })

  const transport = await createTransport(broker)
  await transport.connect()
  const ids = Array.from({ length: N }, (_, i) => `${key}-${i}`)
  await sendTask(transport, 'loss.work', { id: ids[0], args: [key, TASK_MS], queue })
  for (let i = 1; i < N; i += 200) {
    await Promise.all(
      ids
        .slice(i, i + 200)
        .map((id) => sendTask(transport, 'loss.work', { id, args: [key, TASK_MS], queue, exchange: queue, routingKey: queue })),
    )
  }
  await transport.close()

  const done = () => redis.scard(`${key}:done`)
  const node = `${uniqueName('lossw')}@testhost`
  const log: string[] = []
  workerLogs.length = 0
  let worker = await spawnWorker(broker, queue, node)
  const reach = (fraction: number) =>
    waitFor(async () => (await done()) >= N * fraction, {
      timeoutMs: 120_000,
      intervalMs: 100,
      what: `${fraction * 100}% of ${N} tasks done`,
    })
  // Ids that may run again, each with the event that allows it: those running
  // (started, not done) at an event, and those a killed or cold-stopped worker
  // had started and not acked (done in a pool process, its result not yet
  // acked by the main one: see the header).
  const mayRepeat = new Map<string, string>()
  const snapshot = async (name: string, unacked: Set<string> = new Set()): Promise<number> => {
    const [startedIds, doneIds] = await Promise.all([redis.smembers(`${key}:started`), redis.smembers(`${key}:done`)])
    const doneSet = new Set(doneIds)
    let n = 0
    for (const id of startedIds) {
      const running = !doneSet.has(id)
      if (!running && !unacked.has(id)) continue
      n += 1
      if (!mayRepeat.has(id)) mayRepeat.set(id, running ? `running at ${name}` : `unacked at ${name}`)
    }
    return n
  }
  const clock = () => new Date().toISOString().slice(11, 23)
  const event = async (name: string, act: (w: Running) => Promise<number | void>) => {
    const at = await done()
    const when = clock()
    const inFlight = await act(worker)
    log.push(`${name} at ${at}/${N}, ${when}${inFlight === undefined ? '' : ` (${inFlight} in flight)`}`)
  }
  const killed = async (w: Running) => {
    killGroup(w.child, 'SIGKILL')
    await w.exited
    // The pool processes' last writes to Redis may still be on their way.
    await new Promise((r) => setTimeout(r, 200))
    const unacked = await heldUnackedByTheDead(kind, queue, redis)
    const inFlight = await snapshot('kill -9', unacked)
    worker = await spawnWorker(broker, queue, node)
    return inFlight
  }

  await reach(0.1)
  await event('kill -9', killed)
  await reach(0.2)
  await event('kill -9', killed)
  await reach(0.35)
  await event('warm stop (TERM)', async (w) => {
    w.child.kill('SIGTERM')
    assert.equal(await w.exited, 0, w.output())
    worker = await spawnWorker(broker, queue, node)
  })
  await reach(0.5)
  await event('cold stop (QUIT)', async (w) => {
    w.child.kill('SIGQUIT')
    assert.equal(await w.exited, 0, w.output())
    const inFlight = await snapshot('cold stop', unfinishedIn(w))
    worker = await spawnWorker(broker, queue, node)
    return inFlight
  })
  await reach(0.65)
  await event('broker connection dropped', async (w) => {
    // The snapshot is taken as soon as the worker logs the loss (rabbitmqctl may take seconds to act).
    const noticed = waitFor(() => w.output().includes('Connection to broker lost'), {
      timeoutMs: 60_000,
      intervalMs: 5,
      what: 'connection lost',
    }).then(() => snapshot('broker drop'))
    noticed.catch(() => undefined)
    assert.ok((await dropConnections(kind, w.child.pid!)) > 0, 'found the worker connections')
    return noticed
  })
  let last = -1
  let lastChange = Date.now()
  await waitFor(
    async () => {
      const now = await done()
      if (now !== last) [last, lastChange] = [now, Date.now()]
      else if (kind === 'redis' && Date.now() - lastChange > 20_000) await clearStaleUnackedMutex(redis, log)
      // No progress for three visibility timeouts (after the mutex check): what is missing is lost, not late.
      return now >= N || Date.now() - lastChange > 45_000
    },
    { timeoutMs: 300_000, intervalMs: 200, what: `all ${N} tasks done` },
  )
  worker.child.kill('SIGTERM')
  assert.equal(await worker.exited, 0, worker.output())

  const runs = await redis.hgetall(`${key}:runs`)
  const missing = ids.filter((id) => !runs[id])
  assert.deepEqual(
    missing.slice(0, 10),
    [],
    `${missing.length} tasks never finished: ${missing.slice(0, 10).join(', ')} (${log.join('; ')})`,
  )
  const twice = Object.entries(runs).filter(([, n]) => Number(n) > 1)
  const byReason = new Map<string, number>()
  for (const [id] of twice) {
    const why = mayRepeat.get(id) ?? 'in flight at no event'
    byReason.set(why, (byReason.get(why) ?? 0) + 1)
  }
  const tally = [...byReason].map(([why, n]) => `${n} ${why}`).join(', ')
  process.stdout.write(
    `# loss test (${kind}): ${N} tasks, ${log.join('; ')}; ${twice.length} ran more than once${tally ? ` (${tally})` : ''}\n`,
  )
  const unexplained = twice.filter(([id]) => !mayRepeat.has(id))
  assert.deepEqual(
    unexplained.slice(0, 10),
    [],
    `${unexplained.length} task(s) ran more than once without being in flight at any event (${mayRepeat.size} were): ${unexplained
      .slice(0, 10)
      .map(([id, n]) => `${id} ×${n}`)
      .join(', ')} (${log.join('; ')})\n${linesAbout(unexplained.slice(0, 12).map(([id]) => id))}`,
  )
}

describe('loss test: kill -9 ×2, warm, cold, broker drop; nothing lost', () => {
  it('[RabbitMQ] every task finishes at least once; repeats only from in-flight tasks', { skip: amqpSkip, timeout: 600_000 }, async () => {
    await runLossTest('amqp')
  })

  // Acking consumers take messages with one script that pops and records in
  // `unacked` atomically (src/transport/redis/consume/unacked.ts claim): kombu's
  // BRPOP-then-HSET gap lost one message per kill -9 here.
  it('[Redis] every task finishes at least once; repeats only from in-flight tasks', { skip: redisSkip, timeout: 600_000 }, async () => {
    await runLossTest('redis')
  })
})
