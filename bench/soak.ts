// A long run of noop tasks through one tsq worker, sampling its memory as it
// goes, to tell a leak (memory that keeps growing with the tasks done) from a
// heap that grew once and stays (warm-up).
//
//   npm run build && node --import tsx bench/soak.ts [--tasks 1000000] [--broker file|redis|amqp] [--pool solo] [-c 8]
//     [--samples 40] [--depth 2000] [--results] [--node-arg=...] [--tsq-arg=...] [--tsq-root DIR] [--json]
//
// The producer keeps the queue between --depth and twice that (a queue of a
// million waiting files would measure the broker's directory listing, not the
// worker), publishing protocol-v2 `proj.noop` tasks through tsq's own
// transport. The worker runs with -l WARNING, no mingle, gossip or events; the
// task's result is not stored unless --results (on file:// the embedded
// result store is the default backend). Every tasks/--samples tasks it prints the worker tree's
// Pss_Anon and RSS (bench/lib/proc-memory.ts), and at the end, the same after
// 10 s idle. The verdict fits a line to the samples after warm-up (the first
// fifth of the tasks) and gives its slope in MB per 100,000 tasks: a leak of
// 50 bytes per task shows as ~5 MB per 100,000.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { declareTaskQueue } from '../src/config/queues.js'
import { encodeTaskV2 } from '../src/protocol/index.js'
import { createTransport, type Transport } from '../src/transport/index.js'
import { benchEnv, formatEnv } from './lib/env.js'
import { processTree, treeMemory } from './lib/proc-memory.js'
import { BROKER_URLS, openTaskQueueBroker } from './lib/task-queue.js'

const ROOT = resolve(import.meta.dirname, '..')
const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '1000000' },
    broker: { type: 'string', default: 'file' },
    pool: { type: 'string', default: 'solo' },
    concurrency: { type: 'string', short: 'c', default: '8' },
    samples: { type: 'string', default: '40' },
    depth: { type: 'string', default: '2000' },
    'node-arg': { type: 'string', multiple: true },
    'tsq-arg': { type: 'string', multiple: true },
    'tsq-root': { type: 'string', default: ROOT },
    results: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
})
const TSQ_ROOT = resolve(values['tsq-root'] as string)
const TSQ_BIN = resolve(TSQ_ROOT, 'bin/run.js')
/** Results stored only with --results: on file:// that is one file per task in the broker's folder (~4 GB per million on ext4). */
const TASK_MODULE = resolve(TSQ_ROOT, values.results ? 'test/fixtures/tasks/noop-tasks.js' : 'bench/fixtures/soak-tasks.js')
const total = Number(values.tasks)
const sampleCount = Number(values.samples)
const lowWater = Number(values.depth)
const kind = values.broker as 'file' | 'redis' | 'amqp'
if (!['file', 'redis', 'amqp'].includes(kind)) throw new Error('--broker is file, redis or amqp')
const say = (line: string) => (values.json ? process.stderr : process.stdout).write(`${line}\n`)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const fileDir = kind === 'file' ? mkdtempSync(join(tmpdir(), 'tsq-soak-')) : ''
const url = kind === 'file' ? `file://${fileDir}` : BROKER_URLS[kind]
const queue = `tsq-soak-${process.pid}`
const node = `soak-${process.pid}@${hostname()}`

/** Ready messages in the queue. */
async function depthOf(): Promise<() => Promise<number>> {
  if (kind === 'file') {
    // The transport's own layout: queues/<queue>/ready/*.msg (the queue name needs no escaping here).
    const ready = join(fileDir, 'queues', queue, 'ready')
    return async () => readdirSync(ready).length
  }
  const broker = await openTaskQueueBroker(kind)
  return () => broker.depth(queue)
}

async function publish(transport: Transport, n: number): Promise<void> {
  const send = async () => {
    const m = encodeTaskV2('proj.noop', { origin: `gen${process.pid}@${hostname()}` })
    await transport.publish('', queue, {
      body: Buffer.from(m.body, 'utf8'),
      properties: {
        contentType: m.contentType,
        contentEncoding: m.contentEncoding,
        headers: m.headers as Record<string, never>,
        deliveryMode: 2,
        priority: 0,
        correlationId: m.properties.correlationId,
        replyTo: m.properties.replyTo,
      },
    })
  }
  // A few in flight at once: the file broker's publish is a write and a rename.
  for (let i = 0; i < n; i += 64) await Promise.all(Array.from({ length: Math.min(64, n - i) }, send))
}

interface Sample {
  tasks: number
  seconds: number
  /** Tasks per second since the previous checkpoint, pauses included. */
  perSecond: number
  /** While it works: taken as the last task of this stretch is published. */
  busy: { anonMb: number; rssMb: number }
  /** Once the queue is empty and the worker has been quiet for a moment (its idle trim has run). */
  idle: { anonMb: number; rssMb: number }
}

/** CPU seconds (user + system) of the process (USER_HZ = 100). */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return 0
  }
}

/** Waits (bounded) until the worker tree has used under 5% of a core for two 250 ms intervals. */
async function quiet(pid: number, maxMs = 15_000): Promise<void> {
  const cpu = () => processTree(pid).reduce((sum, p) => sum + cpuSeconds(p), 0)
  const deadline = Date.now() + maxMs
  let calm = 0
  let before = cpu()
  while (calm < 2 && Date.now() < deadline) {
    await sleep(250)
    const now = cpu()
    calm = now - before <= 0.0125 ? calm + 1 : 0
    before = now
  }
}

/** Least-squares slope of y over x. */
function slope(xs: number[], ys: number[]): number {
  const n = xs.length
  const mx = xs.reduce((a, b) => a + b, 0) / n
  const my = ys.reduce((a, b) => a + b, 0) / n
  let num = 0
  let den = 0
  for (let i = 0; i < n; i += 1) {
    num += (xs[i]! - mx) * (ys[i]! - my)
    den += (xs[i]! - mx) ** 2
  }
  return den === 0 ? 0 : num / den
}

say(
  `# soak  ${formatEnv(benchEnv('/usr/bin/python3'))}  broker=${kind}  pool=${values.pool} -c ${values.concurrency}  tasks=${total}  queue depth ${lowWater}-${2 * lowWater}`,
)
const transport = await createTransport(url)
await transport.connect()
await declareTaskQueue(transport, queue)
const depth = await depthOf()
const nodeArgs = (values['node-arg'] as string[] | undefined) ?? []
const tsqArgs = (values['tsq-arg'] as string[] | undefined) ?? []
const every = Math.max(1, Math.floor(total / sampleCount))
let published = Math.min(2 * lowWater, every)
await publish(transport, published)
const child = spawn(
  process.execPath,
  [
    ...nodeArgs,
    TSQ_BIN,
    'worker',
    '-A',
    TASK_MODULE,
    '-b',
    url,
    '-n',
    node,
    '-P',
    values.pool as string,
    '-c',
    values.concurrency as string,
    '-Q',
    queue,
    '-l',
    'WARNING',
    '--without-mingle',
    '--without-gossip',
    ...tsqArgs,
  ],
  {
    cwd: TSQ_ROOT,
    env: { ...process.env, NO_COLOR: '1' },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  },
)
let stderr = ''
child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4000)))
const pid = child.pid as number
const samples: Sample[] = []
// Ctrl-C (or a TERM) ends the soak at the next checkpoint's wait: the worker is stopped, its folder
// removed, and the verdict given over the checkpoints so far, so a long soak cut short still says something.
let interrupted = false
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => (interrupted = true))
try {
  const start = performance.now()
  let last = { tasks: 0, at: start }
  const mb = (v: number) => v.toFixed(1).padStart(7)
  say(
    `${'tasks'.padStart(9)}  ${'seconds'.padStart(7)}  ${'tasks/s'.padStart(7)}  ${'busy: anon MB'.padStart(13)}  ${'rss MB'.padStart(7)}  ${'idle: anon MB'.padStart(13)}  ${'rss MB'.padStart(7)}`,
  )
  for (let target = Math.min(every, total); ; target = Math.min(target + every, total)) {
    // Publish up to this checkpoint, keeping the queue between lowWater and twice that.
    while (published < target && !interrupted) {
      if (child.exitCode !== null) throw new Error(`the worker exited (${child.exitCode}): ${stderr}`)
      if ((await depth()) < lowWater) {
        const n = Math.min(lowWater, target - published)
        await publish(transport, n)
        published += n
      } else {
        await sleep(20)
      }
    }
    const busyNow = treeMemory(pid)
    if (interrupted) break
    while ((await depth()) > 0) {
      if (child.exitCode !== null) throw new Error(`the worker exited (${child.exitCode}): ${stderr}`)
      await sleep(50)
    }
    // The last claimed tasks finish, then the loop goes quiet and the idle trim runs.
    await quiet(pid)
    await sleep(1500)
    const idleNow = treeMemory(pid)
    const now = performance.now()
    const s: Sample = {
      tasks: target,
      seconds: (now - start) / 1000,
      perSecond: ((target - last.tasks) * 1000) / Math.max(1, now - last.at),
      busy: { anonMb: busyNow.anonMb, rssMb: busyNow.rssMb },
      idle: { anonMb: idleNow.anonMb, rssMb: idleNow.rssMb },
    }
    last = { tasks: target, at: now }
    samples.push(s)
    say(
      `${String(s.tasks).padStart(9)}  ${s.seconds.toFixed(0).padStart(7)}  ${s.perSecond.toFixed(0).padStart(7)}  ${mb(s.busy.anonMb).padStart(13)}  ${mb(s.busy.rssMb)}  ${mb(s.idle.anonMb).padStart(13)}  ${mb(s.idle.rssMb)}`,
    )
    if (target >= total) break
  }
} finally {
  try {
    process.kill(pid, 'SIGTERM')
  } catch {
    /* gone */
  }
  await Promise.race([new Promise((r) => child.once('exit', r)), sleep(15_000)])
  try {
    process.kill(-pid, 'SIGKILL')
  } catch {
    /* gone */
  }
  await transport.deleteQueue(queue).catch(() => undefined)
  await transport.close().catch(() => undefined)
  if (fileDir) rmSync(fileDir, { recursive: true, force: true })
}

const done = samples.at(-1)?.tasks ?? 0
if (interrupted) say(`interrupted after ${done} of ${total} tasks`)
// Warm-up: the first fifth of the tasks planned, or of those done when cut short.
const warm = samples.filter((s) => s.tasks > (interrupted ? done : total) / 5)
if (warm.length >= 3) {
  const xs = warm.map((s) => s.tasks / 100_000)
  const fmt = (ys: number[]) =>
    `slope=${slope(xs, ys).toFixed(2)} MB/100k tasks, range ${Math.min(...ys).toFixed(1)}-${Math.max(...ys).toFixed(1)} MB`
  say(`soak-${kind}  ${values.pool} -c ${values.concurrency}, ${warm.length} checkpoints after warm-up (from ${warm[0]!.tasks} tasks):`)
  say(`  idle anon ${fmt(warm.map((s) => s.idle.anonMb))}; idle rss ${fmt(warm.map((s) => s.idle.rssMb))}`)
  say(`  busy anon ${fmt(warm.map((s) => s.busy.anonMb))}; busy rss ${fmt(warm.map((s) => s.busy.rssMb))}`)
}
if (values.json)
  process.stdout.write(
    `${JSON.stringify({ broker: kind, pool: values.pool, concurrency: Number(values.concurrency), tasks: total, samples })}\n`,
  )
