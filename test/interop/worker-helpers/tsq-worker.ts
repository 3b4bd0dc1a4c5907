// Starts a tsq worker (bin/run.js, as a shell script would) for the worker
// interop, e2e and fuzz tests, and runs Python Celery against it. Every process
// started here is stopped by its own pid or by the process group it leads.
import { spawn, type ChildProcess } from 'node:child_process'
import { GroupProcess, sleep } from '../../helpers/process-group.js'
import { resolve } from 'node:path'
import { PY_DIR, PYTHON, REPO_ROOT, TSQ_BIN, parseJsonOut, run, uniqueNodeName, type RunResult } from '../helpers/python-worker.js'

export const TASKS_MODULE = resolve(REPO_ROOT, 'test/fixtures/tasks/interop-tasks.js')

/** Where Python's worker_app.py sends and the tsq worker consumes. */
export interface WiEnv {
  broker: string
  backend: string
  queue: string
}

function pyEnv(env: WiEnv): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PYTHONPATH: PY_DIR,
    PYTHONDONTWRITEBYTECODE: '1',
    TSQ_WI_BROKER: env.broker,
    TSQ_WI_BACKEND: env.backend,
    TSQ_WI_QUEUE: env.queue,
  }
}

/** `python3 -m celery -A worker_app <args>`. */
export function celery(env: WiEnv, args: readonly string[], timeoutMs = 30_000): Promise<RunResult> {
  return run(PYTHON, ['-m', 'celery', '-A', 'worker_app', ...args], { cwd: PY_DIR, env: pyEnv(env), timeoutMs })
}

/** `python3 -m celery ... --json`, parsed; throws with both streams when it fails. */
export async function celeryJson(env: WiEnv, args: readonly string[], timeoutMs = 30_000): Promise<unknown> {
  const res = await celery(env, [...args, '--json'], timeoutMs)
  if (res.code !== 0) throw new Error(`celery ${args.join(' ')} exited ${res.code}\nstdout: ${res.stdout}\nstderr: ${res.stderr}`)
  // `celery status --json` adds "N nodes online." after the document.
  const firstLine = res.stdout.trimStart().split('\n')[0] ?? ''
  return parseJsonOut({ ...res, stdout: firstLine }, `celery ${args.join(' ')}`)
}

/** One worker_client.py command, its JSON line parsed. */
export async function pyClient<T = Record<string, unknown>>(env: WiEnv, args: readonly string[], timeoutMs = 60_000): Promise<T> {
  const res = await run(PYTHON, [resolve(PY_DIR, 'worker_client.py'), ...args], { cwd: PY_DIR, env: pyEnv(env), timeoutMs })
  if (res.code !== 0) throw new Error(`worker_client.py ${args.join(' ')} exited ${res.code}\nstdout: ${res.stdout}\nstderr: ${res.stderr}`)
  return parseJsonOut(res, `worker_client.py ${args[0]}`) as T
}

/** What clock_push.py saw: the ping replies, each reply's `clock` header as py-amqp read it ([type, value]), the clock in `inspect clock`'s reply. */
export interface ClockPush {
  ping: Record<string, unknown> | null
  header_clocks: [string, unknown][]
  clock: number | null
}

/**
 * Drives `node`'s Lamport clock past `target` the way Celery's clients move it:
 * a control request whose `clock` header is target + 2 (test/interop/py/clock_push.py),
 * then `inspect ping` and `inspect clock`. A worker started without mingle and
 * gossip counts from 0, so a suite that must meet 16-bit clocks (128..32767,
 * where tsq once wrote a header Python misread) pushes it there first.
 */
export async function pushWorkerClock(env: WiEnv, node: string, target: number, timeoutMs = 30_000): Promise<ClockPush> {
  const res = await run(PYTHON, [resolve(PY_DIR, 'clock_push.py'), node, String(target)], { cwd: PY_DIR, env: pyEnv(env), timeoutMs })
  if (res.code !== 0) throw new Error(`clock_push.py ${node} ${target} exited ${res.code}\nstdout: ${res.stdout}\nstderr: ${res.stderr}`)
  return parseJsonOut(res, 'clock_push.py') as ClockPush
}

export interface TsqWorkerOptions {
  env: WiEnv
  pool?: 'prefork' | 'threads' | 'solo'
  concurrency?: number
  nodename?: string
  events?: boolean
  module?: string
  loglevel?: string
  /** Follow the other workers' heartbeats (off by default here: most tests want a quiet log). */
  gossip?: boolean
  extraArgs?: readonly string[]
  readyTimeoutMs?: number
  /** How much of the worker's output to keep (the tail), for tests that read the whole log. */
  keepLogChars?: number
  /**
   * No -Q: the worker consumes its app's default queue, which the module sets
   * to env.queue from TSQ_WI_DEFAULT_QUEUE (test/fixtures/tasks/interop-tasks.js).
   */
  queueFromApp?: boolean
  /** The app sets Celery's worker_direct (TSQ_WI_WORKER_DIRECT, read by interop-tasks.js). */
  workerDirect?: boolean
  /** The app sets Celery's result_extended (TSQ_WI_RESULT_EXTENDED, read by interop-tasks.js). */
  resultExtended?: boolean
}

export class TsqWorker extends GroupProcess {
  constructor(
    readonly nodename: string,
    child: ChildProcess,
    keepLog: number,
  ) {
    super(child, keepLog)
  }

  /** Warm shutdown (TERM to the main process only, as an operator would), then KILL the group; pool children must never outlive the test. */
  async stop(graceMs = 10_000): Promise<void> {
    await this.stopWith(() => {
      try {
        process.kill(this.pid, 'SIGTERM')
      } catch {
        /* gone */
      }
    }, graceMs)
  }
}

/** Starts `tsq worker` on env.queue and waits until it logs "<node> ready.". */
export async function startTsqWorker(o: TsqWorkerOptions): Promise<TsqWorker> {
  const nodename = o.nodename ?? uniqueNodeName('tsq')
  const args = [
    TSQ_BIN,
    'worker',
    '-A',
    o.module ?? TASKS_MODULE,
    '-b',
    o.env.broker,
    '--result-backend',
    o.env.backend,
    '-n',
    nodename,
    '-c',
    String(o.concurrency ?? 2),
    '-P',
    o.pool ?? 'prefork',
    ...(o.queueFromApp ? [] : ['-Q', o.env.queue]),
    '-l',
    o.loglevel ?? 'INFO',
    '--without-mingle',
    ...(o.gossip ? [] : ['--without-gossip']),
    ...(o.events ? ['-E'] : []),
    ...(o.extraArgs ?? []),
  ]
  const child = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      NO_COLOR: '1',
      ...(o.queueFromApp ? { TSQ_WI_DEFAULT_QUEUE: o.env.queue } : {}),
      ...(o.workerDirect ? { TSQ_WI_WORKER_DIRECT: '1' } : {}),
      ...(o.resultExtended ? { TSQ_WI_RESULT_EXTENDED: '1' } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  const worker = new TsqWorker(nodename, child, o.keepLogChars ?? 4_000_000)
  const deadline = Date.now() + (o.readyTimeoutMs ?? 30_000)
  const ready = `${nodename} ready.`
  try {
    while (!worker.log.includes(ready)) {
      if (worker.hasExited) throw new Error('tsq worker exited during start-up')
      if (Date.now() > deadline) throw new Error('tsq worker did not log "ready." in time')
      await sleep(50)
    }
  } catch (err) {
    await worker.stop(2_000)
    throw new Error(`${(err as Error).message}\n--- worker log ---\n${worker.logTail()}`, { cause: err })
  }
  return worker
}

export { uniqueNodeName }
