// Spawns Python Celery 5.2.6 (the peer) and the tsq CLI for interop tests and
// benches. Every process started here is stopped by its own pid (or its own
// process group, which it leads), never by name.
import { spawn, type ChildProcess } from 'node:child_process'
import { GroupProcess, sleep } from '../../helpers/process-group.js'
import { hostname } from 'node:os'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

export const PYTHON = '/usr/bin/python3'
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')
export const PY_DIR = resolve(REPO_ROOT, 'test/interop/py')
/** TSQ_INTEROP_TSQ_BIN points at another build (e.g. a snapshot while dist/ is being rebuilt). */
export const TSQ_BIN = process.env.TSQ_INTEROP_TSQ_BIN ?? resolve(REPO_ROOT, 'bin/run.js')

/** Where the peer app (test/interop/py/tasks.py) sends tasks and stores results. */
export interface PeerEnv {
  broker: string
  backend: string
  /** The default task queue; unique per run so no other test's worker takes our tasks. */
  queue: string
}

export interface RunResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

export interface RunOptions {
  timeoutMs?: number
  env?: NodeJS.ProcessEnv
  cwd?: string
}

function peerProcessEnv(peer: PeerEnv): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PYTHONPATH: PY_DIR,
    PYTHONDONTWRITEBYTECODE: '1',
    TSQ_INTEROP_BROKER: peer.broker,
    TSQ_INTEROP_BACKEND: peer.backend,
    TSQ_INTEROP_QUEUE: peer.queue,
  }
}

/** Runs a command to completion, killing it (by pid) if it outlives the bound. */
export function run(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  const { timeoutMs = 30_000 } = opts
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    const timer = setTimeout(() => {
      stderr += `\n[killed by test helper after ${timeoutMs} ms]`
      child.kill('SIGKILL')
    }, timeoutMs)
    child.once('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      resolvePromise({ code, signal, stdout, stderr })
    })
  })
}

/** `python3 -m celery -A tasks <args>` with the peer app's environment. */
export function runCelery(args: readonly string[], peer: PeerEnv, opts: RunOptions = {}): Promise<RunResult> {
  return run(PYTHON, ['-m', 'celery', '-A', 'tasks', ...args], { cwd: PY_DIR, env: peerProcessEnv(peer), ...opts })
}

/** A helper script from test/interop/py (e.g. result_state.py). */
export function runPyScript(script: string, args: readonly string[], peer: PeerEnv, opts: RunOptions = {}): Promise<RunResult> {
  return run(PYTHON, [resolve(PY_DIR, script), ...args], { cwd: PY_DIR, env: peerProcessEnv(peer), ...opts })
}

/**
 * Self-check of the harness: with TSQ_INTEROP_TSQ_IS_CELERY=1 the suites run
 * celery where they would run tsq (dropping the flags celery takes only before
 * the subcommand, which the peer environment already supplies), so a failure
 * then is the suite's own.
 */
function celeryInPlaceOfTsq(args: readonly string[], opts: RunOptions): Promise<RunResult> {
  const kept: string[] = []
  const env = { ...process.env, ...opts.env }
  for (let i = 0; i < args.length; i += 1) {
    const a = args[i] as string
    if (a === '-b' || a === '--broker') env.TSQ_INTEROP_BROKER = args[++i]
    else if (a === '--result-backend') env.TSQ_INTEROP_BACKEND = args[++i]
    else kept.push(a)
  }
  env.PYTHONPATH = PY_DIR
  return run(PYTHON, ['-m', 'celery', '-A', 'tasks', ...kept], { ...opts, cwd: PY_DIR, env })
}

/** `node bin/run.js <args>` from the repo root, as a shell script would run tsq. */
export function runTsq(args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  if (process.env.TSQ_INTEROP_TSQ_IS_CELERY === '1') return celeryInPlaceOfTsq(args, opts)
  const env = { ...process.env, NO_COLOR: '1', ...opts.env }
  return run(process.execPath, [TSQ_BIN, ...args], { cwd: REPO_ROOT, ...opts, env })
}

/**
 * Python's json writes bare Infinity/-Infinity/NaN (celery's `inspect conf
 * true` has `result_backend_max_retries: Infinity`); read them as strings.
 */
export function parsePythonJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch (err) {
    // Tokens outside strings only: split on string literals, patch the rest.
    const patched = text
      .split(/("(?:[^"\\]|\\.)*")/)
      .map((part, i) => (i % 2 === 1 ? part : part.replace(/-?Infinity|NaN/g, (t) => `"${t}"`)))
      .join('')
    if (patched === text) throw err
    return JSON.parse(patched) as unknown
  }
}

/** Parses the single JSON document a `--json` run must print on stdout. */
export function parseJsonOut(res: RunResult, what: string): unknown {
  const text = res.stdout.trim()
  try {
    return parsePythonJson(text)
  } catch {
    throw new Error(`${what}: stdout is not one JSON document (exit ${res.code}).\nstdout: ${text}\nstderr: ${res.stderr}`)
  }
}

let nodeCounter = 0
/** A node name no other test run uses, with the host part Celery's %h gives. */
export function uniqueNodeName(prefix = 'py'): string {
  nodeCounter += 1
  const short = `${prefix}${nodeCounter}-${process.pid}-${Date.now().toString(36)}`
  return `${short}@${hostname()}`
}

export interface WorkerOptions {
  peer: PeerEnv
  nodename?: string
  concurrency?: number
  /** Extra queues to consume besides peer.queue. */
  extraArgs?: readonly string[]
  readyTimeoutMs?: number
}

export class PythonWorker extends GroupProcess {
  constructor(
    readonly nodename: string,
    readonly peer: PeerEnv,
    child: ChildProcess,
  ) {
    super(child)
  }

  /** Warm shutdown (TERM to the group), then KILL after the bound; prefork children may outlive a parent shut down remotely. */
  async stop(graceMs = 10_000): Promise<void> {
    await this.stopWith(() => this.signalGroup('SIGTERM'), graceMs)
  }
}

/**
 * Starts `celery worker` (prefork, -c 2, no gossip, no mingle) on peer.queue and
 * waits until it has logged "ready." and answers `celery inspect ping -d node`.
 */
export async function startPythonWorker(opts: WorkerOptions): Promise<PythonWorker> {
  const nodename = opts.nodename ?? uniqueNodeName()
  const args = [
    '-m',
    'celery',
    '-A',
    'tasks',
    'worker',
    '-n',
    nodename,
    '-c',
    String(opts.concurrency ?? 2),
    '-P',
    'prefork',
    '-Q',
    opts.peer.queue,
    '--without-gossip',
    '--without-mingle',
    '-l',
    'INFO',
    ...(opts.extraArgs ?? []),
  ]
  const child = spawn(PYTHON, args, {
    cwd: PY_DIR,
    env: peerProcessEnv(opts.peer),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  const worker = new PythonWorker(nodename, opts.peer, child)
  const deadline = Date.now() + (opts.readyTimeoutMs ?? 30_000)
  try {
    while (!/\bready\.\s*$/m.test(worker.log)) {
      if (worker.hasExited) throw new Error('worker exited during start-up')
      if (Date.now() > deadline) throw new Error('worker did not log "ready." in time')
      await sleep(100)
    }
    for (;;) {
      const res = await runCelery(['inspect', 'ping', '-d', nodename, '-t', '2', '--json'], opts.peer, { timeoutMs: 20_000 })
      if (res.code === 0) break
      if (Date.now() > deadline) throw new Error(`worker does not answer ping: ${res.stderr}`)
      await sleep(200)
    }
  } catch (err) {
    await worker.stop(2_000)
    throw new Error(`${(err as Error).message}\n--- worker log ---\n${worker.logTail()}`, { cause: err })
  }
  return worker
}

/** Empties the peer queue (leftovers from an interrupted run). */
export async function purgeQueue(peer: PeerEnv): Promise<void> {
  const res = await runCelery(['purge', '-f', '-Q', peer.queue], peer, { timeoutMs: 20_000 })
  if (res.code !== 0) throw new Error(`celery purge failed (${res.code}): ${res.stderr}`)
}
