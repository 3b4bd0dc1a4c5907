// The pages' live updates (/api/ui/stream), as server-sent events: a hello
// with the summary, then every SSE_FLUSH_MS the rows of the tasks and workers
// that changed. A client that reads slower than events come is told to
// resync (reload its page) instead of being buffered without end.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { TaskRecord, WorkerRecord } from '../cluster-state/index.js'
import type { Cluster } from './cluster.js'
import { summary, taskRow, workerSummary } from './views.js'

const SSE_FLUSH_MS = 250
/** An update carries at most this many task rows (the latest changed); `more` says a page should reload instead. */
const SSE_MAX_TASKS = 200
const PING_MS = 15_000

interface StreamClient {
  res: ServerResponse
  /** The socket's buffer is full: this client gets a resync instead of more data. */
  stalled: boolean
}

export class LiveStream {
  private readonly clients = new Set<StreamClient>()
  private readonly changedTasks = new Set<string>()
  private readonly changedWorkers = new Set<string>()
  private flushTimer: NodeJS.Timeout | undefined

  constructor(
    private readonly cluster: Cluster,
    private readonly log?: (line: string) => void,
  ) {
    cluster.state.onChange((change) => {
      // Changes are kept only for a page that listens: with none, they would
      // pile up one uuid per task for as long as it runs (a new page starts
      // from its own load, not from these).
      if (this.clients.size === 0) return
      if (change.kind === 'task') this.changedTasks.add(change.task.uuid)
      else if (change.kind === 'worker') this.changedWorkers.add(change.worker.hostname)
      if (this.clients.size) this.flushTimer ??= setTimeout(() => this.flush(), SSE_FLUSH_MS)
    })
  }

  open(req: IncomingMessage, res: ServerResponse): void {
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    })
    const client: StreamClient = { res, stalled: false }
    this.clients.add(client)
    res.write(`retry: 2000\nevent: hello\ndata: ${JSON.stringify(summary(this.cluster))}\n\n`)
    const ping = setInterval(() => this.write(client, ': ping\n\n'), PING_MS)
    const done = (): void => {
      clearInterval(ping)
      this.clients.delete(client)
      if (this.clients.size === 0) {
        this.changedTasks.clear()
        this.changedWorkers.clear()
      }
    }
    req.on('close', done)
    res.on('error', done)
    res.on('drain', () => {
      if (client.stalled) {
        client.stalled = false
        this.write(client, `event: resync\ndata: {}\n\n`)
      }
    })
  }

  /** Ends every stream (the server is closing). */
  close(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer)
    for (const client of this.clients) client.res.end()
    this.clients.clear()
  }

  private write(client: StreamClient, text: string): void {
    if (client.stalled || client.res.destroyed) return
    try {
      // A client that reads slower than events come is told to reload its view later, not buffered without end.
      if (!client.res.write(text)) client.stalled = true
    } catch {
      this.clients.delete(client)
    }
  }

  private flush(): void {
    this.flushTimer = undefined
    // Runs from a timer: whatever a task holds, a failure here must not end the process.
    try {
      this.flushChanges()
    } catch (error) {
      this.changedTasks.clear()
      this.changedWorkers.clear()
      this.log?.(`live update failed: ${(error as Error).message}`)
      for (const client of this.clients) this.write(client, `event: resync\ndata: {}\n\n`)
    }
  }

  private flushChanges(): void {
    const state = this.cluster.state
    const ids = [...this.changedTasks]
    this.changedTasks.clear()
    const tasks = ids
      .slice(-SSE_MAX_TASKS)
      .map((id) => state.tasks.get(id))
      .filter((t): t is TaskRecord => Boolean(t))
      .map((t) => taskRow(t))
    const workers = [...this.changedWorkers]
      .map((name) => state.workers.get(name))
      .filter((w): w is WorkerRecord => Boolean(w))
      .map((w) => workerSummary(this.cluster, w))
    this.changedWorkers.clear()
    const data = JSON.stringify({ tasks, more: ids.length > SSE_MAX_TASKS, newTasks: ids.length, workers, summary: summary(this.cluster) })
    for (const client of this.clients) this.write(client, `event: update\ndata: ${data}\n\n`)
  }
}
