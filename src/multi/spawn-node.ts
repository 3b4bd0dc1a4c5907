// Runs one node's `tsq worker --detach ...` and waits for the detaching
// process to exit, as Celery's multi waits for its forking child.
import { spawn } from 'node:child_process'

export interface SpawnResult {
  code: number | null
  signal: NodeJS.Signals | null
  /** The worker's pid when the detacher printed it (`<node>: detached as pid N`). */
  pid: number | null
  /** The first line the detacher wrote to stderr, for FAILED messages. */
  error: string | null
}

export function spawnDetached(
  executable: string,
  argv: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<SpawnResult> {
  return new Promise((resolvePromise) => {
    let out = ''
    let err = ''
    let settled = false
    const done = (r: SpawnResult) => {
      if (!settled) {
        settled = true
        resolvePromise(r)
      }
    }
    const child = spawn(executable, [...argv], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d))
    child.once('error', (e) => done({ code: null, signal: null, pid: null, error: e.message }))
    child.once('close', (code, signal) => {
      const m = /detached as pid (\d+)/.exec(out)
      const firstErr =
        err
          .split('\n')
          .map((l) => l.trim())
          .find(Boolean) ?? null
      done({ code, signal, pid: m ? Number(m[1]) : null, error: firstErr })
    })
  })
}
