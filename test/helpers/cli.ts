// Runs the built CLI as a shell script would: a child process, no terminal.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))
export const BIN = join(ROOT, 'bin', 'run.js')

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * `tsq args`. `asExecutable`: run bin/run.js itself, as a shell runs the `tsq`
 * on its PATH (its first line, sh, starts Node), not `node bin/run.js`.
 */
export function runTsq(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; input?: string; asExecutable?: boolean } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const [cmd, argv] = options.asExecutable ? [BIN, args] : [process.execPath, [BIN, ...args]]
    const child = spawn(cmd, argv, { cwd: ROOT, env: { ...process.env, ...options.env }, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(
        new Error(`tsq ${args.join(' ')} did not finish within ${options.timeoutMs ?? 60_000} ms\nstdout: ${stdout}\nstderr: ${stderr}`),
      )
    }, options.timeoutMs ?? 60_000)
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
    child.stdin.end(options.input ?? '')
  })
}

/**
 * `tsq args` on the fast path (when it takes the line) and on oclif's
 * (TSQ_NO_FAST_PATH=1), asserting both print the same bytes and exit the same;
 * the fast run's result.
 */
export async function runOnBothPaths(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  const [fast, slow] = await Promise.all([
    runTsq(args, { env: { ...env, TSQ_NO_TRICKS: '', TSQ_NO_FAST_PATH: '' } }),
    runTsq(args, { env: { ...env, TSQ_NO_FAST_PATH: '1' } }),
  ])
  const what = `tsq ${args.join(' ')}`
  assert.equal(fast.code, slow.code, `${what}: exit code\nfast: ${fast.stderr}\noclif: ${slow.stderr}`)
  assert.equal(fast.stdout, slow.stdout, `${what}: stdout`)
  assert.equal(fast.stderr, slow.stderr, `${what}: stderr`)
  return fast
}

/** A private embedded broker for one test file. */
/** Homes made by this test file, removed when its process exits. */
const homes: string[] = []
process.once('exit', () => {
  for (const home of homes) {
    try {
      rmSync(home, { recursive: true, force: true })
    } catch {
      // What cannot be removed (a file still held open) stays; the test's outcome does not depend on it.
    }
  }
})

export function tempTsqHome(): string {
  const home = mkdtempSync(join(tmpdir(), 'tsq-test-home-'))
  homes.push(home)
  return home
}

/**
 * The environment of a tsq run on the embedded broker under `home`: broker and
 * backend variables from the caller's shell are blanked, so they cannot point
 * the run elsewhere.
 */
export function embeddedBrokerEnv(home: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { TSQ_HOME: home, TSQ_BROKER_URL: '', CELERY_BROKER_URL: '', TSQ_RESULT_BACKEND: '', CELERY_RESULT_BACKEND: '', ...extra }
}

export interface SpawnedWorker {
  child: ChildProcess
  nodename: string
  output: () => string
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/** `bin` and `cwd`: another copy of tsq to run, and where (a world-readable install, see world-readable.ts). */
export async function startWorker(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; nodename: string; readyTimeoutMs?: number; bin?: string; cwd?: string },
): Promise<SpawnedWorker> {
  const child = spawn(process.execPath, [options.bin ?? BIN, 'worker', '-n', options.nodename, ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout!.on('data', (d) => (output += d))
  child.stderr!.on('data', (d) => (output += d))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const deadline = Date.now() + (options.readyTimeoutMs ?? 30_000)
  while (!output.includes(`${options.nodename} ready.`)) {
    if (child.exitCode !== null) throw new Error(`worker exited early (${child.exitCode}):\n${output}`)
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`worker not ready in time:\n${output}`)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  return {
    child,
    nodename: options.nodename,
    output: () => output,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
      const code = await exited
      clearTimeout(timer)
      return code
    },
  }
}

/** `tsq call TASK --args JSON [extra...]`, as a script sends a task; the id it prints. */
export async function callTask(env: NodeJS.ProcessEnv, task: string, args: unknown[], extra: string[] = []): Promise<string> {
  const r = await runTsq(['call', task, '--args', JSON.stringify(args), ...extra], { env })
  if (r.code !== 0) throw new Error(`tsq call ${task} exited ${r.code}: ${r.stderr}`)
  return r.stdout.trim()
}

/** `tsq result ID --json`, waiting up to 30 s; a failed task's document too (its exit code is not 0). */
export async function taskResult(env: NodeJS.ProcessEnv, id: string): Promise<{ status: string; result: unknown }> {
  const r = await runTsq(['result', id, '-t', '30', '--json'], { env })
  try {
    return JSON.parse(r.stdout) as { status: string; result: unknown }
  } catch {
    throw new Error(`tsq result ${id} exited ${r.code} without a JSON document: ${r.stdout}${r.stderr}`)
  }
}
