// Shared by the signing and serializer interop tests: a Python Celery worker and
// client on test/interop/py/security_app.py, a tsq worker on
// test/fixtures/tasks/security-tasks.js, one settings JSON for both sides.
import { spawn } from 'node:child_process'
import { resolve } from 'node:path'
import { GroupProcess, sleep } from '../../helpers/process-group.js'
import { PY_DIR, PYTHON, REPO_ROOT, parseJsonOut, run, uniqueNodeName } from './python-worker.js'
import { startTsqWorker, type TsqWorker } from '../worker-helpers/tsq-worker.js'

export const SEC_TASKS = resolve(REPO_ROOT, 'test/fixtures/tasks/security-tasks.js')
/** Results of every test here: Redis db 10, away from the other suites. */
export const SEC_BACKEND = 'redis://127.0.0.1:6379/10'

export interface SecSide {
  broker: string
  backend: string
  queue: string
  conf: Record<string, unknown>
  /** The serializer inside auth (setup_security's `serializer`). */
  inner?: string
}

function pyEnv(s: SecSide): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PYTHONPATH: PY_DIR,
    PYTHONDONTWRITEBYTECODE: '1',
    TSQ_SEC_BROKER: s.broker,
    TSQ_SEC_BACKEND: s.backend,
    TSQ_SEC_QUEUE: s.queue,
    TSQ_SEC_CONF: JSON.stringify(s.conf),
    TSQ_SEC_INNER: s.inner ?? 'json',
  }
}

export class PySecWorker extends GroupProcess {
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

/** `celery -A security_app worker` on s.queue, solo pool; waits for "ready.". */
export async function startPySecWorker(s: SecSide): Promise<PySecWorker> {
  const args = [
    '-m',
    'celery',
    '-A',
    'security_app',
    'worker',
    '-n',
    uniqueNodeName('pysec'),
    '-P',
    'solo',
    '-Q',
    s.queue,
    '--without-gossip',
    '--without-mingle',
    '--without-heartbeat',
    '-l',
    'INFO',
  ]
  const child = spawn(PYTHON, args, { cwd: PY_DIR, env: pyEnv(s), stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  const worker = new PySecWorker(child, 2_000_000)
  const deadline = Date.now() + 60_000
  while (!/\bready\.\s*$/m.test(worker.log)) {
    if (worker.hasExited || Date.now() > deadline) {
      await worker.stop(2_000)
      throw new Error(`Python worker did not start\n--- log ---\n${worker.logTail()}`)
    }
    await sleep(100)
  }
  return worker
}

/** `tsq worker -A security-tasks.js` with the settings in TSQ_SEC_CONF (read when the module loads). */
export async function startTsqSecWorker(s: SecSide, setup = false): Promise<TsqWorker> {
  const saved = { conf: process.env.TSQ_SEC_CONF, setup: process.env.TSQ_SEC_SETUP, inner: process.env.TSQ_SEC_INNER }
  // spawn copies the environment at once, so setting it around the call is enough.
  process.env.TSQ_SEC_CONF = JSON.stringify(s.conf)
  process.env.TSQ_SEC_INNER = s.inner ?? 'json'
  if (setup) process.env.TSQ_SEC_SETUP = '1'
  else delete process.env.TSQ_SEC_SETUP
  try {
    return await startTsqWorker({
      env: { broker: s.broker, backend: s.backend, queue: s.queue },
      module: SEC_TASKS,
      pool: 'solo',
      concurrency: 4,
      readyTimeoutMs: 60_000,
    })
  } finally {
    for (const [k, v] of [
      ['TSQ_SEC_CONF', saved.conf],
      ['TSQ_SEC_SETUP', saved.setup],
      ['TSQ_SEC_INNER', saved.inner],
    ] as const) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
  }
}

export interface PyOutcome {
  id: string
  state?: string
  result?: unknown
  error?: string
}

/** security_client.py: `call` waits for the result, `send` only sends. */
export async function pySecClient(s: SecSide, args: readonly string[], timeoutMs = 60_000): Promise<PyOutcome> {
  const res = await run(PYTHON, [resolve(PY_DIR, 'security_client.py'), ...args], { cwd: PY_DIR, env: pyEnv(s), timeoutMs })
  if (res.code !== 0)
    throw new Error(`security_client.py ${args.join(' ')} exited ${res.code}\nstdout: ${res.stdout}\nstderr: ${res.stderr}`)
  return parseJsonOut(res, `security_client.py ${args[0]}`) as PyOutcome
}

/** Python's ints come back as {int: "digits"} (exact past 2**53); the same shape for JS values. */
export function pyShape(v: unknown): unknown {
  if (typeof v === 'bigint') return { int: v.toString() }
  if (typeof v === 'number' && Number.isInteger(v)) return { int: String(v) }
  if (v instanceof Uint8Array) return { bytes: Buffer.from(v).toString('hex') }
  if (Array.isArray(v)) return v.map(pyShape)
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, pyShape(x)]))
  return v
}
