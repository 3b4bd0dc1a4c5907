// The health server's thread: an HTTP server on an event loop of its own, so
// it answers while the main loop runs a task's synchronous code (the solo
// pool) or is stuck. It reads what the main loop wrote into shared memory and
// the texts it last posted; it never waits on the main thread.

/** The shared words, BigInt64 cells (Atomics work on them, and ms since 1970 fit); times are Date.now(). */
export const CELL = {
  /** The main loop's last tick. */
  tick: 0,
  /** 1 when the process says it is ready, 0 when not. */
  ready: 1,
  /** When the oldest task running on the main thread (the solo pool) started; 0 when none runs. */
  syncSince: 2,
  /** That task's time limit in ms; 0 when it has none. */
  syncLimit: 3,
  /** --health-stuck-after in ms. */
  stuckAfter: 4,
} as const
export const CELLS = 5

export interface ThreadData {
  host: string
  port: number
  shared: SharedArrayBuffer
}

/** What the main thread posts to the health thread. */
export type ToThread = { kind: 'reason'; text: string } | { kind: 'metrics'; text: string; load: unknown }

/**
 * The thread's whole program. It runs from its source text (an eval worker),
 * so it must be self-contained: Node's own modules come through `load` (a
 * dynamic import made in the thread's text, which a bundler cannot rewrite).
 */
export async function healthThreadMain(load: (id: string) => Promise<unknown>): Promise<void> {
  const { workerData, parentPort } = (await load('node:worker_threads')) as typeof import('node:worker_threads')
  const { createServer } = (await load('node:http')) as typeof import('node:http')
  const data = workerData as ThreadData
  const cells = new BigInt64Array(data.shared)
  const cell = (i: number): number => Number(Atomics.load(cells, i))
  let reason = 'starting'
  let metrics = ''
  let loadJson: unknown = { queues: {} }
  parentPort!.on('message', (m: ToThread) => {
    if (m.kind === 'reason') reason = m.text
    else {
      metrics = m.text
      loadJson = m.load
    }
  })
  const now = (): number => Date.now()
  /** null when alive; else why not. */
  const stuck = (): string | null => {
    const t = now()
    const after = cell(4)
    const syncSince = cell(2)
    if (syncSince > 0) {
      // A task runs on the main thread (the solo pool): a still loop is that task's work, up to its time limit.
      if (cell(0) >= t - after) return null
      const limit = cell(3)
      if (limit === 0 || t - syncSince <= limit + after) return null
      return `the event loop has not turned for ${((t - cell(0)) / 1000).toFixed(1)} s, in a task running for ${((t - syncSince) / 1000).toFixed(1)} s, past its time limit and --health-stuck-after`
    }
    const idle = t - cell(0)
    return idle > after ? `the event loop has not turned for ${(idle / 1000).toFixed(1)} s` : null
  }
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]
    const reply = (status: number, body: string, type = 'text/plain; charset=utf-8'): void => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' })
      res.end(body)
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return reply(405, 'method not allowed\n')
    if (path === '/healthz' || path === '/livez') {
      const why = stuck()
      return why ? reply(503, `stuck: ${why}\n`) : reply(200, 'ok\n')
    }
    if (path === '/readyz') {
      const why = stuck()
      if (why) return reply(503, `not ready: stuck: ${why}\n`)
      return cell(1) === 1 ? reply(200, 'ready\n') : reply(503, `not ready: ${reason}\n`)
    }
    // The main loop refreshes what these show when it can; the answer is the last figures, now.
    if (path === '/metrics' || path === '/load') parentPort!.postMessage({ kind: 'scraped' })
    if (path === '/metrics') {
      const lag = Math.max(0, now() - cell(0)) / 1000
      const own =
        `# HELP tsq_event_loop_last_tick_age_seconds Seconds since the main event loop last turned\n` +
        `# TYPE tsq_event_loop_last_tick_age_seconds gauge\ntsq_event_loop_last_tick_age_seconds ${lag}\n` +
        `# HELP tsq_ready Whether /readyz answers 200\n# TYPE tsq_ready gauge\ntsq_ready ${cell(1)}\n`
      return reply(200, metrics + own, 'text/plain; version=0.0.4; charset=utf-8')
    }
    if (path === '/load') return reply(200, JSON.stringify(loadJson) + '\n', 'application/json')
    return reply(404, 'not found: /healthz, /readyz, /metrics, /load\n')
  })
  server.keepAliveTimeout = 5000
  server.once('error', (error: NodeJS.ErrnoException) =>
    parentPort!.postMessage({ kind: 'error', code: error.code ?? '', message: error.message }),
  )
  server.listen(data.port, data.host, () => {
    const address = server.address()
    parentPort!.postMessage({ kind: 'listening', port: typeof address === 'object' && address ? address.port : data.port })
  })
}
