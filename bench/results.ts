// Results stored and fetched per second on PostgreSQL through Celery's
// database backend (`db+postgresql://`): a tsq worker beside a Python Celery
// 5.2.6 worker, same database, same broker, same run.
//
//   npm run build && node --import tsx bench/results.ts [--tasks 500] [--json]
//
// stored/s: the worker is started on its own queue and answers ready; then N
// `proj.add` tasks are sent at once and the clock runs until N SUCCESS rows
// are in celery_taskmeta (broker, run and the row write, the write dominating).
// fetched/s: the N results read back one after another by the side's own
// client (tsq's AsyncResult.get(); Python's AsyncResult.get()).
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { createApp } from '../src/index.js'
import { benchEnv, formatEnv } from './lib/env.js'

const ROOT = resolve(import.meta.dirname, '..')
const PY_DIR = resolve(ROOT, 'test/interop/py')
const PYTHON = '/usr/bin/python3'
const BROKER = process.env.TSQ_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/0'
const { values } = parseArgs({ options: { tasks: { type: 'string', default: '500' }, json: { type: 'boolean', default: false } } })
const N = Number(values.tasks)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const dbName = `tsq_bench_results_${randomBytes(4).toString('hex')}`
const admin = new pg.Client({ connectionString: 'postgresql://postgres@127.0.0.1/postgres' })
await admin.connect()
await admin.query(`CREATE DATABASE ${dbName}`)
const dbUrl = `postgresql://postgres@127.0.0.1/${dbName}`
const backend = `db+${dbUrl}`
const db = new pg.Client({ connectionString: dbUrl })

function startWorker(side: 'tsq' | 'celery', queue: string): ChildProcess {
  const common = ['-n', `${side}-bench-${process.pid}@%h`, '-c', '2', '-Q', queue, '-l', 'INFO', '--without-mingle', '--without-gossip']
  return side === 'tsq'
    ? spawn(
        process.execPath,
        [
          resolve(ROOT, 'bin/run.js'),
          'worker',
          '-A',
          resolve(ROOT, 'test/fixtures/tasks/interop-tasks.js'),
          '-b',
          BROKER,
          '--result-backend',
          backend,
          '-P',
          'threads',
          ...common,
        ],
        { cwd: ROOT, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
      )
    : spawn(PYTHON, ['-m', 'celery', '-A', 'worker_app', 'worker', '-P', 'prefork', ...common], {
        cwd: PY_DIR,
        env: { ...process.env, PYTHONPATH: PY_DIR, PYTHONDONTWRITEBYTECODE: '1', TSQ_WI_BROKER: BROKER, TSQ_WI_BACKEND: backend },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      })
}

async function ready(child: ChildProcess): Promise<void> {
  let log = ''
  child.stdout!.on('data', (d: Buffer) => (log += d))
  child.stderr!.on('data', (d: Buffer) => (log += d))
  const deadline = Date.now() + 60_000
  while (!/\bready\.\s*$/m.test(log)) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`worker did not start:\n${log.slice(-2000)}`)
    await sleep(100)
  }
}

async function measure(side: 'tsq' | 'celery'): Promise<{ stored: number; fetched: number }> {
  const queue = `tsq-bench-results-${side}-${process.pid}`
  const child = startWorker(side, queue)
  const app = createApp({ broker: BROKER, resultBackend: backend })
  try {
    await ready(child)
    const ids: string[] = []
    const started = performance.now()
    for (let i = 0; i < N; i += 1) ids.push((await app.sendTask('proj.add', [i, i], {}, { queue })).id)
    for (;;) {
      const { rows } = await db.query("SELECT count(*)::int AS n FROM celery_taskmeta WHERE status = 'SUCCESS' AND task_id = ANY($1)", [
        ids,
      ])
      if (rows[0].n >= N) break
      await sleep(20)
    }
    const stored = N / ((performance.now() - started) / 1000)
    let fetched: number
    if (side === 'tsq') {
      const t0 = performance.now()
      for (const id of ids) await app.asyncResult(id).get({ timeout: 10 })
      fetched = N / ((performance.now() - t0) / 1000)
    } else {
      const script =
        'import json, sys, time\nfrom worker_app import app\nids = json.load(sys.stdin)\nt0 = time.perf_counter()\nfor i in ids: app.AsyncResult(i).get(timeout=10)\nprint(len(ids) / (time.perf_counter() - t0))'
      const py = spawn(PYTHON, ['-c', script], {
        cwd: PY_DIR,
        env: { ...process.env, PYTHONPATH: PY_DIR, TSQ_WI_BROKER: BROKER, TSQ_WI_BACKEND: backend },
        stdio: ['pipe', 'pipe', 'inherit'],
      })
      let out = ''
      py.stdout.on('data', (d: Buffer) => (out += d))
      py.stdin.end(JSON.stringify(ids))
      await new Promise((r) => py.once('exit', r))
      fetched = Number(out.trim())
    }
    return { stored, fetched }
  } finally {
    await app.close()
    try {
      process.kill(-child.pid!, 'SIGTERM')
    } catch {
      // gone
    }
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)))
  }
}

try {
  await db.connect()
  const env = benchEnv(PYTHON)
  // Python first, so its SQLAlchemy creates the tables both sides then share.
  const celery = await measure('celery')
  const tsq = await measure('tsq')
  if (values.json) {
    console.log(JSON.stringify({ env, tasks: N, tsq, celery }))
  } else {
    console.log(`# results  ${formatEnv(env)}  tasks=${N}  backend=db+postgresql (local)`)
    console.log(
      `stored/s   tsq=${tsq.stored.toFixed(1)}  peer=${celery.stored.toFixed(1)}  ratio=${(tsq.stored / celery.stored).toFixed(2)}   (tsq threads -c 2; peer: celery prefork -c 2)`,
    )
    console.log(
      `fetched/s  tsq=${tsq.fetched.toFixed(1)}  peer=${celery.fetched.toFixed(1)}  ratio=${(tsq.fetched / celery.fetched).toFixed(2)}   (tsq AsyncResult.get; peer: Celery AsyncResult.get)`,
    )
  }
} finally {
  await db.end().catch(() => undefined)
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`)
  await admin.end()
}
