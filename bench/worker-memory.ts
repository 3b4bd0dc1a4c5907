// A worker's memory, tsq beside Python Celery 5.2.6, pool for pool (solo,
// prefork -c 2, threads -c 2), idle and after draining a pre-filled queue of
// noop tasks, all from one run on the same broker.
//
//   npm run build && node --import tsx bench/worker-memory.ts [--tasks 20000] [--broker redis --broker amqp] [--pools solo,prefork,threads] [--runs 3] [--json]
//     [--node-arg=--max-semi-space-size=1 ...] [--tsq-arg=... ] [--celery-arg=...] [--tsq-env=NAME=VALUE ...] [--tsq-root /tmp/tsq-copy]
//
// The figure is anonymous memory, Pss_Anon from /proc/<pid>/smaps_rollup summed
// over the worker's process tree (bench/lib/proc-memory.ts): the memory the
// worker asks for, with pages a fork shares copy-on-write counted once. RSS is
// printed beside it for reference; it also counts, in every process, the pages
// of the runtime's own binary and libraries (about 40 MB of node's per Node
// process), which the program cannot change.
//
// Method per contender: fill queue Q with N protocol-v2 `proj.noop` messages;
// start the worker on another, empty queue (-l WARNING, no mingle/gossip, no
// result backend); once it answers ping, wait 2 s and sample its memory three
// times, 500 ms apart (idle = the largest); `control add_consumer Q`; sample
// every 250 ms while it drains (peak); once Q is empty and the worker's CPU has
// gone quiet, sample every 500 ms for --settle-ms: `soon` is the largest sample
// of the first 5 s, `after` the last one, what the worker holds at rest after
// the run (a tsq worker compacts its heap once idle, and a threads pool's
// threads exit after 10 s with nothing to do; Celery's figure does not move).
// Rounds go through
// every contender in turn (tsq and Celery interleaved), and each figure is
// reported as the median of the rounds with its range.
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { benchEnv, formatEnv } from './lib/env.js'
import { median } from './lib/measure.js'
import { processTree, treeMemory, type TreeMemory } from './lib/proc-memory.js'
import { BROKER_URLS, openTaskQueueBroker, type BrokerKind, type TaskQueueBroker } from './lib/task-queue.js'

const ROOT = resolve(import.meta.dirname, '..')
const PY_DIR = resolve(ROOT, 'test/interop/py')
const PYTHON = '/usr/bin/python3'
const POOLS = { solo: 1, prefork: 2, threads: 2 } as const
type Pool = keyof typeof POOLS
type Side = 'tsq' | 'celery'

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '20000' },
    broker: { type: 'string', multiple: true },
    pools: { type: 'string', default: 'solo,prefork,threads' },
    runs: { type: 'string', default: '3' },
    'settle-ms': { type: 'string', default: '15000' },
    json: { type: 'boolean', default: false },
    'node-arg': { type: 'string', multiple: true },
    'tsq-arg': { type: 'string', multiple: true },
    'celery-arg': { type: 'string', multiple: true },
    'tsq-env': { type: 'string', multiple: true },
    'tsq-root': { type: 'string', default: ROOT },
    only: { type: 'string' },
  },
})
/** --tsq-root: a copy of the package (bin/, dist/, package.json, the noop module) to measure instead of this tree's build. */
const TSQ_ROOT = resolve(values['tsq-root'] as string)
const TSQ_BIN = resolve(TSQ_ROOT, 'bin/run.js')
const NOOP_MODULE = resolve(TSQ_ROOT, 'test/fixtures/tasks/noop-tasks.js')
const tasks = Number(values.tasks)
const runs = Number(values.runs)
const settleMs = Number(values['settle-ms'])
if (!(Number.isInteger(runs) && runs >= 1)) throw new Error('--runs must be a whole number >= 1')
const kinds = (values.broker ?? ['redis', 'amqp']) as BrokerKind[]
const pools = (values.pools as string).split(',') as Pool[]
for (const p of pools) if (!(p in POOLS)) throw new Error(`unknown pool ${p} (solo, prefork, threads)`)
const sides: Side[] = values.only ? (values.only.split(',') as Side[]) : ['tsq', 'celery']
const tsqEnv = Object.fromEntries(
  ((values['tsq-env'] as string[] | undefined) ?? []).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const say = (line: string) => (values.json ? process.stderr : process.stdout).write(`${line}\n`)

function workerCommand(
  side: Side,
  pool: Pool,
  kind: BrokerKind,
  node: string,
  idleQueue: string,
): { cmd: string; args: string[]; cwd: string; env: NodeJS.ProcessEnv } {
  const common = [
    '-n',
    node,
    '-P',
    pool,
    '-c',
    String(POOLS[pool]),
    '-Q',
    idleQueue,
    '-l',
    'WARNING',
    '--without-mingle',
    '--without-gossip',
  ]
  if (side === 'tsq') {
    const nodeArgs = (values['node-arg'] as string[] | undefined) ?? []
    const extra = (values['tsq-arg'] as string[] | undefined) ?? []
    return {
      cmd: process.execPath,
      args: [...nodeArgs, TSQ_BIN, 'worker', '-A', NOOP_MODULE, '-b', BROKER_URLS[kind], ...common, ...extra],
      cwd: TSQ_ROOT,
      env: { ...process.env, NO_COLOR: '1', ...tsqEnv },
    }
  }
  const extra = (values['celery-arg'] as string[] | undefined) ?? []
  return {
    cmd: PYTHON,
    args: ['-m', 'celery', '-A', 'worker_app', 'worker', ...common, ...extra],
    cwd: PY_DIR,
    env: { ...process.env, PYTHONPATH: PY_DIR, PYTHONDONTWRITEBYTECODE: '1', TSQ_WI_BROKER: BROKER_URLS[kind], TSQ_WI_BACKEND: '' },
  }
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

/** CPU seconds (user + system) the processes have used so far (USER_HZ = 100). */
function cpuSeconds(pids: readonly number[]): number {
  let ticks = 0
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
      ticks += Number(fields[11]) + Number(fields[12])
    } catch {
      /* gone */
    }
  }
  return ticks / 100
}

/** Waits (bounded) until the processes have used under 5% of a core for two 250 ms intervals. */
async function quiet(pids: () => number[], maxMs = 15_000): Promise<void> {
  const deadline = Date.now() + maxMs
  let calm = 0
  let before = cpuSeconds(pids())
  while (calm < 2 && Date.now() < deadline) {
    await sleep(250)
    const now = cpuSeconds(pids())
    calm = now - before <= 0.0125 ? calm + 1 : 0
    before = now
  }
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

interface Sample {
  anonMb: number
  rssMb: number
  processes: number
}

interface Measured {
  broker: BrokerKind
  side: Side
  pool: Pool
  idle: Sample
  peak: Sample
  /** The largest sample in the first 5 s after the worker went quiet. */
  soon: Sample
  /** At rest: the last sample, --settle-ms after it went quiet. */
  after: Sample
  drainSeconds: number
  /** CPU (user + system) the worker tree spent per 1,000 tasks, from add_consumer until it went quiet. */
  cpuMsPer1000: number
}

const sample = (m: TreeMemory): Sample => ({ anonMb: m.anonMb, rssMb: m.rssMb, processes: m.pids.length })
const larger = (a: Sample, b: Sample): Sample => ({
  anonMb: Math.max(a.anonMb, b.anonMb),
  rssMb: Math.max(a.rssMb, b.rssMb),
  processes: Math.max(a.processes, b.processes),
})
const ZERO: Sample = { anonMb: 0, rssMb: 0, processes: 0 }

async function measureOne(broker: TaskQueueBroker, side: Side, pool: Pool): Promise<Measured> {
  const kind = broker.kind
  const queue = `tsq-bench-mem-${process.pid}-${side}-${pool}-${kind}`
  const idleQueue = `${queue}-idle`
  await broker.remove([queue, idleQueue])
  await broker.fill(queue, tasks)
  const node = `bench-mem-${side}-${pool}-${process.pid}@${hostname()}`
  const spec = workerCommand(side, pool, kind, node, idleQueue)
  const child = spawn(spec.cmd, spec.args, { cwd: spec.cwd, env: spec.env, stdio: ['ignore', 'ignore', 'pipe'], detached: true })
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4000)))
  const pid = child.pid as number
  try {
    const deadline = Date.now() + 60_000
    while ((await tsqCli(['inspect', 'ping', '-d', node, '-b', BROKER_URLS[kind], '-t', '2', '--json'])) !== 0) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${side} ${pool} did not start: ${stderr}`)
    }
    await sleep(2000)
    let idle = ZERO
    for (let i = 0; i < 3; i += 1) {
      if (i) await sleep(500)
      idle = larger(idle, sample(treeMemory(pid)))
    }
    const added = tsqCli(['control', 'add_consumer', queue, '-d', node, '-b', BROKER_URLS[kind], '-t', '5', '--json'])
    let peak = ZERO
    const started = Date.now()
    const cpuBefore = cpuSeconds(processTree(pid))
    const drainBy = started + 10 * 60_000
    for (;;) {
      peak = larger(peak, sample(treeMemory(pid)))
      if ((await broker.depth(queue)) === 0) break
      if (child.exitCode !== null) throw new Error(`${side} ${pool} exited while draining: ${stderr}`)
      if (Date.now() > drainBy) throw new Error(`${side} ${pool} did not drain ${tasks} tasks in 10 minutes`)
      await sleep(250)
    }
    const drainSeconds = (Date.now() - started) / 1000
    await added
    // The last prefetched tasks still run when the queue reads empty.
    await quiet(() => processTree(pid))
    // Under a loaded machine the drain's wall time says little; its CPU says what a memory setting costs.
    const cpuMsPer1000 = ((cpuSeconds(processTree(pid)) - cpuBefore) * 1000 * 1000) / tasks
    let after = ZERO
    let soon = ZERO
    for (let waited = 0; waited <= settleMs; waited += 500) {
      await sleep(500)
      const now = sample(treeMemory(pid))
      peak = larger(peak, now)
      if (waited < 5000) soon = larger(soon, now)
      after = now
    }
    return { broker: kind, side, pool, idle, peak, soon, after, drainSeconds, cpuMsPer1000 }
  } finally {
    await stopWorker(child)
    await broker.remove([queue, idleQueue])
  }
}

// ---- main ------------------------------------------------------------------

const env = benchEnv(PYTHON)
say(`# worker-memory  ${formatEnv(env)}  tasks=${tasks}  runs=${runs}  figure=Pss_Anon summed over the process tree (MiB)`)
const all: Measured[] = []
for (const kind of kinds) {
  let broker: TaskQueueBroker
  try {
    broker = await openTaskQueueBroker(kind)
  } catch (error) {
    say(`${kind}: broker not reachable on 127.0.0.1, skipped (${(error as Error).message})`)
    continue
  }
  try {
    for (let round = 1; round <= runs; round += 1) {
      for (const pool of pools) {
        for (const side of sides) {
          try {
            const m = await measureOne(broker, side, pool)
            all.push(m)
            say(
              `${kind}  round ${round}  ${side.padEnd(6)} ${pool.padEnd(7)}  anon idle=${m.idle.anonMb.toFixed(1)} peak=${m.peak.anonMb.toFixed(1)} soon=${m.soon.anonMb.toFixed(1)} after=${m.after.anonMb.toFixed(1)}  rss idle=${m.idle.rssMb.toFixed(1)} after=${m.after.rssMb.toFixed(1)}  processes=${m.after.processes}  drain=${m.drainSeconds.toFixed(1)}s cpu=${m.cpuMsPer1000.toFixed(0)}ms/1000`,
            )
          } catch (error) {
            say(`${kind}  round ${round}  ${side.padEnd(6)} ${pool.padEnd(7)}  FAILED: ${(error as Error).message.split('\n')[0]}`)
          }
        }
      }
    }
  } finally {
    // A broker restarted under the run has closed the connection already: the figures so far still print.
    await broker.close().catch(() => undefined)
  }
  // tsq beside Celery, pool for pool: median of the rounds [min-max].
  const fig = (side: Side, pool: Pool, pick: (m: Measured) => number): string => {
    const xs = all.filter((m) => m.broker === kind && m.side === side && m.pool === pool).map(pick)
    if (xs.length === 0) return '?'
    const spread = xs.length > 1 ? ` [${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)}]` : ''
    return `${median(xs).toFixed(1)}${spread}`
  }
  const ok = (pool: Pool, pick: (m: Measured) => number): string => {
    const med = (side: Side) => median(all.filter((m) => m.broker === kind && m.side === side && m.pool === pool).map(pick))
    const [t, c] = [med('tsq'), med('celery')]
    return Number.isNaN(t) || Number.isNaN(c) ? '' : t < c ? ' (tsq lower)' : ` (tsq HIGHER by ${(t - c).toFixed(1)})`
  }
  for (const pool of pools) {
    const label = `${pool} -c ${POOLS[pool]}`
    say(
      `worker-memory-${kind}  ${label.padEnd(12)} anon idle: tsq=${fig('tsq', pool, (m) => m.idle.anonMb)} celery=${fig('celery', pool, (m) => m.idle.anonMb)}${ok(pool, (m) => m.idle.anonMb)}` +
        `  after ${tasks}, at rest: tsq=${fig('tsq', pool, (m) => m.after.anonMb)} celery=${fig('celery', pool, (m) => m.after.anonMb)}${ok(pool, (m) => m.after.anonMb)}` +
        `  | first 5 s after: tsq=${fig('tsq', pool, (m) => m.soon.anonMb)} celery=${fig('celery', pool, (m) => m.soon.anonMb)}` +
        `  | peak: tsq=${fig('tsq', pool, (m) => m.peak.anonMb)} celery=${fig('celery', pool, (m) => m.peak.anonMb)}` +
        `  | rss after: tsq=${fig('tsq', pool, (m) => m.after.rssMb)} celery=${fig('celery', pool, (m) => m.after.rssMb)}`,
    )
  }
}
if (values.json) process.stdout.write(`${JSON.stringify({ env, tasks, runs, results: all })}\n`)
