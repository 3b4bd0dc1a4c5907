// The main thread's side of the health server: starts the thread, turns the
// loop's ticks, readiness and the last metrics into what the thread reads.
// The thread answers from those alone, so a busy or stuck main loop cannot
// slow an answer; a stuck one shows as ticks that stopped.
import { Worker } from 'node:worker_threads'
import { codedError } from '../../protocol/index.js'
import { CELL, CELLS, healthThreadMain, type ThreadData, type ToThread } from './health-thread.js'

/** A health port that cannot be listened on, or a bad --health-port value: usage (64). */
export class HealthPortError extends codedError('USAGE') {}

/** How often the main loop says it is alive: well under any stuck-after a probe would use. */
const TICK_MS = 250
/** How often pollReadiness reads the process's state. */
const READY_POLL_MS = 500
/** Seconds without a tick after which /healthz fails: long enough for a full GC or a slow module load. */
export const DEFAULT_STUCK_AFTER_S = 30

export interface HealthOptions {
  /** `PORT` or `HOST:PORT`; the host defaults to every interface (a pod's probes come to its IP). */
  listen: string | number
  stuckAfterS?: number
}

/** `8080`, `127.0.0.1:8080`, `[::1]:8080` → host and port. */
export function parseHealthListen(value: string | number): { host: string; port: number } {
  const text = String(value).trim()
  const match = /^(?:\[([^\]]+)\]:|([^:]+):)?(\d{1,5})$/.exec(text)
  const port = match ? Number(match[3]) : NaN
  if (!match || !(port >= 0 && port <= 65535))
    throw new HealthPortError(`--health-port: expected PORT or HOST:PORT (0-65535), got ${JSON.stringify(text)}`)
  return { host: match[1] ?? match[2] ?? '0.0.0.0', port }
}

/** The one health server of this process, for the solo pool's marks (mainThreadTask). */
let current: HealthServer | null = null

export class HealthServer {
  private readonly cells: BigInt64Array
  private thread: Worker | null = null
  private ticker: NodeJS.Timeout | null = null
  private poller: NodeJS.Timeout | null = null
  private reason = 'starting'
  private scrapeListener: (() => void) | undefined
  private readonly tasks = new Set<{ since: number; limitMs: number }>()
  port = 0

  private constructor(
    private readonly shared: SharedArrayBuffer,
    private readonly host: string,
    private readonly wantedPort: number,
  ) {
    this.cells = new BigInt64Array(shared)
  }

  /** Listens (the thread up and bound) before it returns; a port in use is a HealthPortError. */
  static async start(o: HealthOptions): Promise<HealthServer> {
    const { host, port } = parseHealthListen(o.listen)
    const server = new HealthServer(new SharedArrayBuffer(CELLS * 8), host, port)
    server.set(CELL.stuckAfter, Math.round((o.stuckAfterS ?? DEFAULT_STUCK_AFTER_S) * 1000))
    await server.open()
    current = server
    return server
  }

  private set(cell: number, value: number): void {
    Atomics.store(this.cells, cell, BigInt(value))
  }

  private async open(): Promise<void> {
    this.beat()
    const data: ThreadData = { host: this.host, port: this.wantedPort, shared: this.shared }
    // `__name`: what tsx's transform (keepNames) may call inside a function's text; a no-op here.
    // Eval code is read as CommonJS or as a module depending on Node's version: import() works in both.
    const source = `const __name = (f) => f;\n(${healthThreadMain.toString()})((id) => import(id))`
    const thread = new Worker(source, { eval: true, workerData: data, env: {} })
    this.thread = thread
    this.port = await new Promise<number>((resolve, reject) => {
      thread.on('message', (m: { kind: string; port?: number; code?: string; message?: string }) => {
        if (m.kind === 'listening') resolve(m.port ?? this.wantedPort)
        if (m.kind === 'scraped') this.scrapeListener?.()
        if (m.kind === 'error')
          reject(
            new HealthPortError(
              `cannot listen on ${this.host}:${this.wantedPort} for health probes: ${m.code === 'EADDRINUSE' ? 'address already in use' : m.message}`,
            ),
          )
      })
      thread.once('error', reject)
    }).catch(async (error: unknown) => {
      await thread.terminate()
      throw error
    })
    // The thread must not keep the process alive, nor the ticks. A thread that dies stops
    // answering, which the probes see; it does not take the process with it.
    thread.unref()
    thread.on('error', () => undefined)
    this.ticker = setInterval(() => this.beat(), TICK_MS)
    this.ticker.unref()
    this.post({ kind: 'reason', text: this.reason })
  }

  private beat(): void {
    this.set(CELL.tick, Date.now())
  }

  private post(message: ToThread): void {
    this.thread?.postMessage(message)
  }

  /** Ready, or not with the reason /readyz gives. */
  setReady(ready: boolean, reason = ''): void {
    this.set(CELL.ready, ready ? 1 : 0)
    const text = ready ? '' : reason || 'not ready'
    if (text !== this.reason) {
      this.reason = text
      this.post({ kind: 'reason', text })
    }
  }

  /** What /metrics (Prometheus text) and /load (JSON, for KEDA's metrics-api scaler) show next. */
  publishMetrics(text: string, load: unknown): void {
    this.post({ kind: 'metrics', text, load })
  }

  /** Reads readiness on the main loop every half second: `unready` gives null when ready, else why not. */
  pollReadiness(unready: () => string | null): void {
    const poll = (): void => {
      const why = unready()
      this.setReady(why === null, why ?? '')
    }
    poll()
    if (this.poller) clearInterval(this.poller)
    this.poller = setInterval(poll, READY_POLL_MS)
    this.poller.unref()
  }

  /** Called (on the main loop) when /metrics or /load was asked for: a cue to refresh what they show. */
  onScrape(listener: () => void): void {
    this.scrapeListener = listener
  }

  /**
   * Marks a task running on the main thread until the returned function runs.
   * The oldest such task is the one /healthz judges by: its time limit, if any.
   */
  enterTask(timeLimitS: number | null): () => void {
    const mark = { since: Date.now(), limitMs: timeLimitS ? Math.round(timeLimitS * 1000) : 0 }
    this.tasks.add(mark)
    this.showOldestTask()
    return () => {
      if (!this.tasks.delete(mark)) return
      this.showOldestTask()
      this.beat()
    }
  }

  private showOldestTask(): void {
    let oldest: { since: number; limitMs: number } | undefined
    for (const mark of this.tasks) if (!oldest || mark.since < oldest.since) oldest = mark
    this.set(CELL.syncLimit, oldest?.limitMs ?? 0)
    this.set(CELL.syncSince, oldest?.since ?? 0)
  }

  async close(): Promise<void> {
    if (this.ticker) clearInterval(this.ticker)
    if (this.poller) clearInterval(this.poller)
    this.ticker = this.poller = null
    if (current === this) current = null
    const thread = this.thread
    this.thread = null
    await thread?.terminate()
  }
}

const NOOP = (): void => undefined

/**
 * The solo pool runs tasks on the main thread: each is marked while it runs,
 * so a long CPU-bound task reads as work on /healthz, not as a stuck loop
 * (until its time limit). Nothing happens when this process serves no health port.
 */
export function mainThreadTask(timeLimitS: number | null): () => void {
  return current ? current.enterTask(timeLimitS) : NOOP
}
