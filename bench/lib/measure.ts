// Wall-clock measurement of whole commands: warm-up runs first (disk cache,
// broker connections, Python bytecode), then N timed runs, reported as median.
import { spawn } from 'node:child_process'

export interface Samples {
  /** Milliseconds per timed run, in run order. */
  readonly ms: readonly number[]
  readonly median: number
  readonly min: number
}

export interface MeasureOptions {
  warmup: number
  repeats: number
}

export interface Command {
  cmd: string
  args: readonly string[]
  cwd?: string
  env?: NodeJS.ProcessEnv
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN
  const s = [...values].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2
}

/** Runs a command once; returns its wall time in ms, throwing if it fails. */
export function timeCommand(c: Command, timeoutMs = 60_000): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint()
    const child = spawn(c.cmd, c.args, { cwd: c.cwd, env: c.env ?? process.env, stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.once('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
    child.once('close', (code) => {
      clearTimeout(timer)
      const ms = Number(process.hrtime.bigint() - start) / 1e6
      if (code === 0) resolve(ms)
      else reject(new Error(`${c.cmd} ${c.args.join(' ')} exited ${code}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`))
    })
  })
}

/** Warm-up then timed runs of `fn`, one at a time. */
export async function measure(fn: () => Promise<number>, opts: MeasureOptions): Promise<Samples> {
  for (let i = 0; i < opts.warmup; i += 1) await fn()
  const ms: number[] = []
  for (let i = 0; i < opts.repeats; i += 1) ms.push(await fn())
  return { ms, median: median(ms), min: Math.min(...ms) }
}

/**
 * Measures two commands with their runs interleaved (tsq, peer, tsq, peer…),
 * so that a load spike on the machine hits both sides alike.
 */
export async function measurePair(a: Command, b: Command, opts: MeasureOptions): Promise<[Samples, Samples]> {
  for (let i = 0; i < opts.warmup; i += 1) {
    await timeCommand(a)
    await timeCommand(b)
  }
  const as: number[] = []
  const bs: number[] = []
  for (let i = 0; i < opts.repeats; i += 1) {
    as.push(await timeCommand(a))
    bs.push(await timeCommand(b))
  }
  const pack = (ms: number[]): Samples => ({ ms, median: median(ms), min: Math.min(...ms) })
  return [pack(as), pack(bs)]
}
