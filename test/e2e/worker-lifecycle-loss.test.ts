// Issue 4's loss test, on RabbitMQ and on Redis: N late-ack tasks through a
// prefork worker that is killed (-9, with its children) twice, warm-stopped,
// cold-stopped and cut off from its broker, restarted each time. Every task
// must finish at least once; a task may run twice only if it was in flight at
// one of those events, so the repeats are bounded by events × (slots + prefetch).
// (`inspect active` just before an event is too slow to name them at 2 ms a
// task: hundreds finish while the CLI starts, so the bound is what we assert.)
//
// N is 10,000 (TSQ_LOSS_TASKS lowers it), in CI too: one prefork worker
// (-c 4, 2 ms tasks) gets through it in about 25 s on RabbitMQ and 30 s on
// Redis here, five restarts included, well inside the 2.5 minutes per broker
// allowed, and a smaller N would bunch the five events into fewer tasks.
import assert from 'node:assert/strict'
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { after, describe, it } from 'node:test'
import { sendTask } from '../../src/app/send-task.js'
import { createTransport } from '../../src/transport/index.js'
import { AMQP_URL, brokerSkipReason, REDIS_URL, uniqueName, waitFor } from '../helpers/brokers.js'
import { BIN, ROOT } from '../helpers/cli.js'
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

after(async () => {
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
  const args = ['worker', '-A', APP, '-n', node, '-Q', queue, '-c', String(CONCURRENCY), '--prefetch-multiplier', String(PREFETCH_MULTIPLIER), '-l', 'INFO', '--without-heartbeat', '--without-mingle']
  const env = { ...process.env, TSQ_BROKER_URL: broker, CELERY_BROKER_URL: '', TSQ_RESULT_BACKEND: '', CELERY_RESULT_BACKEND: '', TSQ_LOSS_REDIS_URL: REDIS_URL }
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  started.push(child)
  // Only the tail is kept: thousands of task lines would otherwise pile up.
  let output = ''
  const keep = (d: Buffer) => {
    output = (output + String(d)).slice(-200_000)
  }
  child.stdout!.on('data', keep)
  child.stderr!.on('data', keep)
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  await waitFor(() => output.includes(`${node} ready.`) || child.exitCode !== null, { timeoutMs: 30_000, what: `${node} ready` })
  assert.equal(child.exitCode, null, `worker exited early:\n${output}`)
  return { child, output: () => output, exited }
}

async function dropConnections(kind: 'amqp' | 'redis', pid: number): Promise<number> {
  if (kind === 'amqp') {
    const out = execFileSync('rabbitmqctl', ['list_connections', '-q', '--no-table-headers', 'pid', 'client_properties'], { encoding: 'utf8' })
    let closed = 0
    for (const line of out.split('\n')) {
      const [connPid] = line.split('\t')
      if (!connPid || !line.includes(`"tsq-${pid}-`)) continue
      execFileSync('rabbitmqctl', ['close_connection', connPid, 'tsq loss test'], { stdio: 'ignore' })
      closed += 1
    }
    return closed
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
 * A restorer killed (or cut off) while it held kombu's `unacked_mutex` leaves
 * it for its 300 s expiry, and nothing is restored meanwhile (kombu does the
 * same). A restore takes milliseconds here, so a mutex set over 20 s ago is
 * stale: the test clears it rather than wait five minutes, and says so.
 */
async function clearStaleUnackedMutex(redis: { ttl(key: string): Promise<number>; del(key: string): Promise<number> }, log: string[]): Promise<void> {
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
    await redis.del(`${key}:runs`, `${key}:done`)
    if (kind === 'redis') await redis.del(queue, `_kombu.binding.${queue}`, ...[1, 2, 3, 4, 5, 6, 7, 8, 9].map((p) => `${queue}\x06\x16${p}`))
    else await deleteCeleryQueues('amqp', AMQP_URL, [queue])
    await redis.quit()
  })

  const transport = await createTransport(broker)
  await transport.connect()
  const ids = Array.from({ length: N }, (_, i) => `${key}-${i}`)
  await sendTask(transport, 'loss.work', { id: ids[0], args: [key, TASK_MS], queue })
  for (let i = 1; i < N; i += 200) {
    await Promise.all(ids.slice(i, i + 200).map((id) => sendTask(transport, 'loss.work', { id, args: [key, TASK_MS], queue, exchange: queue, routingKey: queue })))
  }
  await transport.close()

  const done = () => redis.scard(`${key}:done`)
  const node = `${uniqueName('lossw')}@testhost`
  const log: string[] = []
  let worker = await spawnWorker(broker, queue, node)
  const reach = (fraction: number) => waitFor(async () => (await done()) >= N * fraction, { timeoutMs: 120_000, intervalMs: 100, what: `${fraction * 100}% of ${N} tasks done` })
  const event = async (name: string, act: (w: Running) => Promise<void>) => {
    const at = await done()
    await act(worker)
    log.push(`${name} at ${at}/${N}`)
  }

  await reach(0.1)
  await event('kill -9', async (w) => {
    killGroup(w.child, 'SIGKILL')
    await w.exited
    worker = await spawnWorker(broker, queue, node)
  })
  await reach(0.2)
  await event('kill -9', async (w) => {
    killGroup(w.child, 'SIGKILL')
    await w.exited
    worker = await spawnWorker(broker, queue, node)
  })
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
    worker = await spawnWorker(broker, queue, node)
  })
  await reach(0.65)
  await event('broker connection dropped', async (w) => {
    assert.ok((await dropConnections(kind, w.child.pid!)) > 0, 'found the worker connections')
    await waitFor(() => w.output().includes('Connection to broker lost'), { timeoutMs: 20_000, what: 'connection lost' })
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
  assert.deepEqual(missing.slice(0, 10), [], `${missing.length} tasks never finished: ${missing.slice(0, 10).join(', ')} (${log.join('; ')})`)
  const twice = Object.entries(runs).filter(([, n]) => Number(n) > 1)
  const bound = 5 * CONCURRENCY * (1 + PREFETCH_MULTIPLIER)
  process.stdout.write(`# loss test (${kind}): ${N} tasks, ${log.join('; ')}; ${twice.length} ran more than once (bound ${bound})\n`)
  assert.ok(twice.length <= bound, `${twice.length} tasks ran twice, more than the ${bound} that could have been in flight`)
}

describe('loss test: kill -9 ×2, warm, cold, broker drop; nothing lost', () => {
  it('[RabbitMQ] every task finishes at least once; repeats only from in-flight tasks', { skip: amqpSkip, timeout: 600_000 }, async () => {
    await runLossTest('amqp')
  })

  // Acking consumers take messages with one script that pops and records in
  // `unacked` atomically (src/transport/redis/unacked.ts claim): kombu's
  // BRPOP-then-HSET gap lost one message per kill -9 here.
  it('[Redis] every task finishes at least once; repeats only from in-flight tasks', { skip: redisSkip, timeout: 600_000 }, async () => {
    await runLossTest('redis')
  })
})
