// Spawns `bin/run.js beat` processes and watches what they send: a consumer on
// the test's own queue records each task's arrival, and each beat's DEBUG log
// line `run N sent` says which run of the entry it was.
import { spawn, type ChildProcess } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createTransport, type Transport } from '../../../src/transport/index.js'

export const RUN_JS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'bin', 'run.js')

export interface BeatProc {
  child: ChildProcess
  /** Run numbers this beat logged as sent, per entry. */
  runs: Array<{ entry: string; n: number; at: number }>
  output: string[]
}

export function startBeat(args: string[], procs: BeatProc[]): BeatProc {
  const child = spawn(process.execPath, [RUN_JS, 'beat', '-l', 'DEBUG', '-q', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  const proc: BeatProc = { child, runs: [], output: [] }
  let buf = ''
  child.stderr!.on('data', (chunk: Buffer) => {
    buf += chunk.toString()
    const lines = buf.split('\n')
    buf = lines.pop()!
    for (const line of lines) {
      proc.output.push(line)
      const m = /beat: (\S+) run (\d+) sent as/.exec(line)
      if (m) proc.runs.push({ entry: m[1]!, n: Number(m[2]), at: Date.now() })
    }
  })
  child.stdout!.resume()
  procs.push(proc)
  return proc
}

export async function stopAll(procs: BeatProc[]): Promise<void> {
  await Promise.all(
    procs.map(
      (p) =>
        new Promise<void>((resolve) => {
          if (p.child.exitCode !== null || p.child.signalCode !== null) return resolve()
          const timer = setTimeout(() => p.child.kill('SIGKILL'), 5000)
          p.child.once('exit', () => {
            clearTimeout(timer)
            resolve()
          })
          p.child.kill('SIGTERM')
        }),
    ),
  )
}

export interface Received {
  task: string
  id: string
  at: number
}

/** Consumes `queue` on `url`, recording each task message. */
export async function watchQueue(url: string, queue: string): Promise<{ received: Received[]; transport: Transport }> {
  const transport = await createTransport(url)
  await transport.connect()
  await transport.declareQueue({ name: queue, durable: true, exclusive: false, autoDelete: false })
  const received: Received[] = []
  await transport.consume(
    queue,
    async (d) => {
      received.push({ task: String(d.properties.headers.task), id: String(d.properties.headers.id), at: Date.now() })
    },
    { noAck: true },
  )
  return { received, transport }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
