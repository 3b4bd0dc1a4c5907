// What the dashboard does on the broker: receive events into the state, ask
// workers (`inspect` as Flower's Inspector does), sample queue depths, send
// control commands and tasks, read results, and keep the state on disk with
// --persistent. The HTTP layer (server.ts) calls only this.
import { randomUUID } from 'node:crypto'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { createResultBackend, type BackendOptions, type ResultBackend } from '../backends/index.js'
import {
  EventReceiver,
  gatherEvidence,
  listFailed,
  replayFailed,
  sampleQueueLoad,
  sendTask,
  whyVerdict,
  type EventsSeen,
  type FailedFilter,
  type FailedTask,
  type QueueLoad,
  type Replayed,
  type WhyAnswer,
} from '../client/index.js'
import { EventLimitError, checkEventValue, checkJsonText, encodeResultMeta, type ResultMeta, maskUrlsInText } from '../protocol/index.js'
import {
  createTransport,
  ensurePrivateFileSync,
  MailboxClient,
  maskUrl,
  replaceFileSync,
  type NodeReply,
  type Transport,
  type TransportSettings,
} from '../transport/index.js'
import { UsageError } from '../cli/errors.js'
import { Features, type FeatureOptions } from './features.js'
import { DashboardMetrics } from './metrics.js'
import { ClusterState, type PersistedState, type StateChange, type TaskRecord } from '../cluster-state/index.js'

/** Flower's Inspector.methods. */
export const INSPECT_METHODS = ['stats', 'active_queues', 'registered', 'scheduled', 'active', 'reserved', 'revoked', 'conf'] as const

export interface ClusterOptions {
  brokerUrl: string
  resultBackend?: string
  /** What the result backend takes from the settings (ssl, Sentinel, database_*); a rediss:// URL's ssl_* parameters win. */
  backendOptions?: Omit<BackendOptions, 'codec'>
  transportSettings?: TransportSettings
  maxTasks: number
  persistent?: { path: string } | null
  purgeOfflineWorkers?: number | null
  enableEvents?: boolean
  /** Queues always sampled, besides those workers consume (the app's default queue). */
  queues?: string[]
  /** Seconds between queue samples. */
  queueInterval?: number
  /** Seconds an inspect waits for each next reply. */
  inspectTimeout?: number
  /** --lock-url (else the store the worker would pick). */
  lockUrl?: string | null
  /** The schedule store, as `tsq schedule` takes it. */
  schedule?: FeatureOptions['schedule']
  log?: (line: string) => void
}

export interface QueueSample {
  /** Unix seconds. */
  at: number
  messages: number
  consumers: number | null
}

export interface ThroughputSample {
  at: number
  succeeded: number
  failed: number
  /** Runtime percentiles of the tasks that finished in this second, seconds. */
  p50: number | null
  p95: number | null
  p99: number | null
}

/** Seconds a control action to named nodes waits for each reply. */
const ACTION_TIMEOUT = 10

/** Events per second under which the tick builds search texts, and its time for them. */
const WARM_BELOW_EVENTS = 2000
const WARM_BUDGET_MS = 25

/** An hour of one-second samples. */
const HISTORY_SECONDS = 3600

/**
 * A copy with every password gone: keys named like one are dropped and URLs
 * lose theirs. Applied to whatever workers reply (their `conf`, `stats`)
 * before it leaves the dashboard.
 */
export function scrubSecrets(value: unknown): unknown {
  // The one masking function: user-info passwords and `?password=`-like query parameters.
  if (typeof value === 'string') return maskUrlsInText(value)
  if (Array.isArray(value)) return value.map(scrubSecrets)
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [key, v] of Object.entries(value)) {
      if (/pass(word)?|secret|^auth$/i.test(key)) continue
      out[key] = scrubSecrets(v)
    }
    return out
  }
  return value
}

/** Bytes a --db state file may hold (its task and worker tables are capped far below this). */
export const MAX_STATE_FILE_BYTES = 256 * 1024 * 1024
export class Cluster {
  readonly state: ClusterState
  readonly metrics = new DashboardMetrics()
  readonly displayUrl: string
  readonly queueHistory = new Map<string, QueueSample[]>()
  readonly throughput: ThroughputSample[] = []
  /** The archive, locks and schedule pages' actions, on this broker connection. */
  readonly features: Features
  private transport: Transport | undefined
  private receiver: EventReceiver | undefined
  private backend: ResultBackend | undefined
  private timers: NodeJS.Timeout[] = []
  private eventsAtTick = 0
  private currentSecond = { at: 0, succeeded: 0, failed: 0, runtimes: [] as number[] }
  private inspecting = new Map<string, Promise<void>>()
  unreadableEvents = 0
  /** Events over the size or depth limit (also counted in unreadableEvents). */
  refusedEvents = 0
  private refusedLoggedAt = 0
  connected = false
  /** Event lag: local_received minus the event's timestamp, seconds, of the last event. */
  lastLag = 0

  constructor(private readonly o: ClusterOptions) {
    this.state = new ClusterState({ maxTasks: o.maxTasks })
    this.displayUrl = maskUrl(o.brokerUrl)
    this.features = new Features({ brokerUrl: o.brokerUrl, resultBackend: o.resultBackend, lockUrl: o.lockUrl, schedule: o.schedule }, () =>
      this.requireTransport(),
    )
    // Private (0600, ours, in a folder others cannot write to): it holds every task's arguments and results.
    if (o.persistent) ensurePrivateFileSync(o.persistent.path, 'dashboard --persistent state')
    if (o.persistent && existsSync(o.persistent.path)) this.load(o.persistent.path)
    this.state.onChange((change) => this.onChange(change))
  }

  private log(line: string): void {
    this.o.log?.(line)
  }

  async start(): Promise<void> {
    const transport = await createTransport(this.o.brokerUrl, this.o.transportSettings ?? {})
    this.transport = transport
    transport.on('connection:lost', (error) => {
      this.connected = false
      this.log(`broker connection lost (${error.message}); reconnecting, state kept`)
    })
    transport.on('connection:restored', () => {
      this.connected = true
      this.log('broker connection restored')
    })
    transport.on('error', () => undefined)
    await transport.connect()
    this.connected = true
    this.receiver = new EventReceiver(transport, {
      onEvent: (event) => this.onEvent(event),
      onUnreadable: (error) => {
        if (error instanceof EventLimitError) return this.refuse(error)
        this.unreadableEvents += 1
        this.metrics.received('unreadable')
      },
      floats: 'number',
    })
    await this.receiver.start()
    const every = (seconds: number, fn: () => unknown): void => {
      const timer = setInterval(
        () =>
          void Promise.resolve()
            .then(fn)
            .catch(() => undefined),
        seconds * 1000,
      )
      timer.unref()
      this.timers.push(timer)
    }
    every(1, () => this.tick())
    every(this.o.queueInterval ?? 5, () => this.sampleQueues())
    every(30, () => this.inspect())
    if (this.o.enableEvents) {
      // Flower's events_enable_interval: workers started later get it too.
      every(5, () => this.cast('enable_events'))
      void this.cast('enable_events').catch(() => undefined)
    }
    if (this.o.persistent) every(60, () => this.save())
    void this.inspect().catch(() => undefined)
    void this.sampleQueues().catch(() => undefined)
  }

  async stop(): Promise<void> {
    for (const timer of this.timers) clearInterval(timer)
    this.timers = []
    await this.receiver?.stop().catch(() => undefined)
    if (this.o.persistent) {
      try {
        this.save()
      } catch (error) {
        this.log(`--persistent: the state could not be written to ${this.o.persistent.path}: ${(error as Error).message}`)
      }
    }
    await this.features.close()
    await this.backend?.close().catch(() => undefined)
    await this.transport?.close({ requeueUnacked: true }).catch(() => undefined)
  }

  /** An event over the limits: dropped, counted, and said at most once a minute. */
  private refuse(error: EventLimitError): void {
    this.unreadableEvents += 1
    this.refusedEvents += 1
    this.metrics.received('refused')
    const now = Date.now()
    if (now - this.refusedLoggedAt >= 60_000) {
      this.refusedLoggedAt = now
      this.log(`${error.message} (${this.refusedEvents} refused so far)`)
    }
  }

  onEvent(event: Record<string, unknown>): void {
    // The receiver checked the text; an event handed over otherwise is checked here, so nothing the state keeps can break a page, an API or --persistent.
    try {
      checkEventValue(event)
    } catch (error) {
      return this.refuse(error as EventLimitError)
    }
    this.metrics.received('applied')
    let applied: boolean
    try {
      applied = this.state.apply(event)
    } catch {
      applied = false
    }
    if (!applied) {
      this.unreadableEvents += 1
      return
    }
    if (typeof event.local_received === 'number' && typeof event.timestamp === 'number')
      this.lastLag = event.local_received - event.timestamp
    const task = typeof event.uuid === 'string' ? this.state.tasks.get(event.uuid) : undefined
    this.metrics.observe(event, task)
    const type = event.type
    if (type === 'task-succeeded' || type === 'task-failed') {
      this.rollSecond()
      if (type === 'task-succeeded') this.currentSecond.succeeded += 1
      else this.currentSecond.failed += 1
      if (typeof event.runtime === 'number') this.currentSecond.runtimes.push(event.runtime)
    }
    // A worker seen for the first time is asked what it is (pool, queues), as Flower does.
    if (type === 'worker-online' && typeof event.hostname === 'string') void this.inspect(event.hostname).catch(() => undefined)
  }

  private onChange(change: StateChange): void {
    if (
      change.kind === 'worker' &&
      change.worker.inspect.timestamp === undefined &&
      !this.inspecting.has(change.worker.hostname) &&
      this.transport
    ) {
      void this.inspect(change.worker.hostname).catch(() => undefined)
    }
  }

  private rollSecond(): void {
    const now = Math.floor(Date.now() / 1000)
    if (now === this.currentSecond.at) return
    if (this.currentSecond.at !== 0) {
      const rts = this.currentSecond.runtimes.sort((a, b) => a - b)
      const pct = (p: number): number | null => (rts.length ? rts[Math.min(rts.length - 1, Math.floor(p * rts.length))]! : null)
      this.throughput.push({
        at: this.currentSecond.at,
        succeeded: this.currentSecond.succeeded,
        failed: this.currentSecond.failed,
        p50: pct(0.5),
        p95: pct(0.95),
        p99: pct(0.99),
      })
      if (this.throughput.length > HISTORY_SECONDS) this.throughput.splice(0, this.throughput.length - HISTORY_SECONDS)
    }
    this.currentSecond = { at: now, succeeded: 0, failed: 0, runtimes: [] }
  }

  private tick(): void {
    this.rollSecond()
    // Search texts are built between bursts: a second with few events gives
    // the next search ready texts, a second at the broker's rate gives intake
    // the CPU.
    const events = this.state.eventCount - this.eventsAtTick
    this.eventsAtTick = this.state.eventCount
    if (events < WARM_BELOW_EVENTS) this.state.warm(WARM_BUDGET_MS)
    const now = Date.now() / 1000
    for (const worker of this.state.workers.values())
      if (!this.state.alive(worker) && worker.heartbeats.length === 0) this.metrics.online.labels(worker.hostname).set(0)
    if (this.o.purgeOfflineWorkers) this.metrics.removeWorkers(this.state.purgeOfflineWorkers(this.o.purgeOfflineWorkers))
    void now
  }

  private requireTransport(): Transport {
    if (!this.transport) throw new Error('the dashboard is not connected to the broker')
    return this.transport
  }

  /** One request on the pidbox; each call has its own reply queue, so calls may overlap. */
  broadcast(
    method: string,
    args: Record<string, unknown> = {},
    options: { destination?: string[] | null; timeout?: number; reply?: boolean; limit?: number | null } = {},
  ): Promise<NodeReply[]> {
    // An action aimed at named nodes returns as soon as each has answered, so
    // its wait can be long (a prefork pool_grow starts a process first); one
    // to all nodes waits the inspect timeout after the last reply.
    const destination = options.destination ?? null
    const timeout = options.timeout ?? (destination ? ACTION_TIMEOUT : (this.o.inspectTimeout ?? 1))
    return new MailboxClient(this.requireTransport()).broadcast(method, {
      arguments: args,
      destination,
      timeout,
      reply: options.reply ?? true,
      limit: options.limit,
    })
  }

  private async cast(method: string): Promise<void> {
    await this.broadcast(method, {}, { reply: false })
  }

  /** Flower's Inspector: every method, the replies kept per worker with a timestamp. */
  inspect(workername?: string): Promise<void> {
    const key = workername ?? '*'
    const running = this.inspecting.get(key)
    if (running) return running
    const work = (async () => {
      const destination = workername ? [workername] : null
      await Promise.all(
        INSPECT_METHODS.map(async (method) => {
          const args = method === 'active' ? { safe: true } : {}
          const replies = await this.broadcast(method, args, {
            destination,
            timeout: workername ? Math.max(this.o.inspectTimeout ?? 1, 3) : (this.o.inspectTimeout ?? 1),
          })
          for (const reply of replies) {
            for (const [node, body] of Object.entries(reply)) {
              if (body && typeof body === 'object' && 'error' in (body as object) && Object.keys(body as object).length === 1) continue
              const worker = this.state.workers.get(node)
              if (!worker) continue
              worker.inspect[method] = scrubSecrets(body)
              worker.inspect.timestamp = Date.now() / 1000
            }
          }
        }),
      )
    })().finally(() => this.inspecting.delete(key))
    this.inspecting.set(key, work)
    return work
  }

  /** The queues workers consume, and the default ones. */
  activeQueueNames(): string[] {
    const names = new Set(this.o.queues ?? [])
    for (const worker of this.state.workers.values()) {
      const queues = worker.inspect.active_queues
      if (Array.isArray(queues))
        for (const q of queues) if (q && typeof (q as { name?: unknown }).name === 'string') names.add((q as { name: string }).name)
    }
    return [...names].sort()
  }

  /** Passive looks at each queue (no management plugin needed). */
  async queueLengths(): Promise<{ name: string; messages: number; consumers: number | null }[]> {
    const transport = this.requireTransport()
    const out: { name: string; messages: number; consumers: number | null }[] = []
    for (const name of this.activeQueueNames()) {
      const status = await transport.checkQueue?.(name).catch(() => null)
      if (status) out.push({ name, messages: status.messageCount, consumers: status.consumerCount })
    }
    return out
  }

  /** The last queue load figures (client/queue-load.ts) and when they were asked for. */
  loads: QueueLoad[] = []
  private loadsAt = 0

  /**
   * Starts a new load sample (four broadcasts and the queues' depths) when the
   * last is over 5 s old; /metrics answers with the last at once, so a scrape never waits on workers.
   */
  refreshLoadSoon(): void {
    if (!this.connected || Date.now() - this.loadsAt < 5000) return
    this.loadsAt = Date.now()
    void sampleQueueLoad(this.requireTransport(), { queues: this.o.queues, timeout: this.o.inspectTimeout ?? 1 })
      .then((loads) => {
        this.loads = loads
        this.metrics.setLoads(loads)
      })
      .catch(() => undefined)
  }

  private async sampleQueues(): Promise<void> {
    if (!this.connected) return
    const at = Date.now() / 1000
    for (const q of await this.queueLengths()) {
      this.metrics.setQueue(q.name, q.messages, q.consumers)
      const history = this.queueHistory.get(q.name) ?? []
      history.push({ at, messages: q.messages, consumers: q.consumers })
      while (history.length && history[0]!.at < at - HISTORY_SECONDS) history.shift()
      this.queueHistory.set(q.name, history)
    }
  }

  async sendTask(
    name: string,
    args: unknown[],
    kwargs: Record<string, unknown>,
    options: { queue?: string; countdown?: number; eta?: string; expires?: number | string; priority?: number; id?: string } = {},
  ): Promise<string> {
    return sendTask(this.requireTransport(), name, { args, kwargs, ...options, queue: options.queue ?? this.o.queues?.[0] })
  }

  hasBackend(): boolean {
    return Boolean(this.o.resultBackend)
  }

  private async resultBackend(): Promise<ResultBackend> {
    this.backend ??= await createResultBackend(this.o.resultBackend, this.o.backendOptions)
    return this.backend
  }

  async result(taskId: string, timeoutMs?: number): Promise<ResultMeta | null> {
    const backend = await this.resultBackend()
    if (timeoutMs) return backend.waitReady(taskId, timeoutMs).catch(() => backend.get(taskId))
    return backend.get(taskId)
  }

  /**
   * Sends a task again as `tsq failed retry` does (client/failed-tasks.ts): the
   * message a tsq worker kept, as it was; else result_extended's exact
   * arguments as a new task; else ResendRefusedError with the reason.
   */
  async resend(taskId: string): Promise<Replayed> {
    return replayFailed(this.requireTransport(), this.o.resultBackend ? await this.resultBackend() : null, taskId)
  }

  /** The failed-task inbox: the result backend's failures and kept messages, and the failures the events told of. */
  async failedTasks(filter: FailedFilter, limit?: number): Promise<FailedTask[]> {
    const events = []
    for (const t of this.state.tasks.values()) {
      if (t.state !== 'FAILURE') continue
      const f = t.fields
      events.push({
        uuid: t.uuid,
        name: typeof f.name === 'string' ? f.name : null,
        exception: typeof f.exception === 'string' ? f.exception : null,
        traceback: typeof f.traceback === 'string' ? f.traceback : null,
        worker: t.worker,
        timestamp: typeof f.failed === 'number' ? f.failed : typeof f.timestamp === 'number' ? f.timestamp : null,
      })
    }
    return listFailed(this.o.resultBackend ? await this.resultBackend() : null, filter, { limit, events })
  }

  /** `tsq why` from here: the events are the state's; the backend, the workers and the broker are asked now. */
  async why(taskId: string): Promise<WhyAnswer> {
    const transport = this.requireTransport()
    const url = this.o.resultBackend
    const backend = url && !/^rpc:/.test(url) ? await this.resultBackend() : null
    const evidence = await gatherEvidence({
      taskId,
      transport,
      broadcast: (method, args) => this.broadcast(method, args),
      backend: backend ? { url: backend.displayUrl, read: (id) => backend.get(id) } : null,
      queues: this.activeQueueNames(),
      events: eventsOfRecord(this.state.tasks.get(taskId)),
    })
    return whyVerdict(evidence)
  }

  /** celery.contrib.abortable: the task reads ABORTED from the backend and stops itself. */
  async abort(taskId: string): Promise<void> {
    const backend = await this.resultBackend()
    await backend.store(taskId, encodeResultMeta({ taskId, status: 'ABORTED', result: null }), 'ABORTED')
  }

  save(): void {
    if (!this.o.persistent) return
    const path = this.o.persistent.path
    const temp = `${path}.${randomUUID()}.tmp`
    // Written beside and renamed: a crash mid-write leaves the last good copy.
    replaceFileSync(temp, path, JSON.stringify(this.state.snapshot()))
  }

  private load(path: string): void {
    let saved: PersistedState
    try {
      // Sized before it is read, nesting checked before it is parsed.
      const size = statSync(path).size
      if (size > MAX_STATE_FILE_BYTES) throw new Error(`${size} bytes, over the limit of ${MAX_STATE_FILE_BYTES}`)
      const text = readFileSync(path, 'utf8')
      checkJsonText(text, 'state file', MAX_STATE_FILE_BYTES)
      saved = JSON.parse(text) as PersistedState
    } catch (error) {
      throw new UsageError(`--db ${path}: not a tsq dashboard state file (${(error as Error).message})`)
    }
    if (!saved || saved.version !== 1 || !Array.isArray(saved.tasks) || !Array.isArray(saved.workers))
      throw new UsageError(`--db ${path}: not a tsq dashboard state file`)
    this.state.restore(saved)
  }
}

/** What the state's record of a task tells `why` (none: no event of it arrived, or it was dropped). */
function eventsOfRecord(task: TaskRecord | undefined): EventsSeen {
  const f = task?.fields ?? {}
  const time = (v: unknown): number | null => (typeof v === 'number' && v > 0 ? v : null)
  const text = (v: unknown): string | null => (typeof v === 'string' && v ? v : null)
  return {
    source: 'dashboard',
    windowS: null,
    timeline: task ? task.timeline.map((t) => ({ type: t.type, timestamp: t.timestamp, hostname: t.hostname })) : [],
    state: task?.state ?? null,
    name: text(f.name),
    worker: task?.worker ?? null,
    routingKey: text(f.routing_key),
    sent: time(f.sent),
    received: time(f.received),
    started: time(f.started),
  }
}
