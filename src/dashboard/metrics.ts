// Flower's Prometheus metrics (flower/events.py PrometheusMetrics), same names,
// help texts, labels and buckets, so Grafana dashboards built for Flower read
// tsq's; plus the queue depth and consumer gauges Flower cannot give without
// RabbitMQ's management plugin. A registry of its own, not prom-client's
// global one, so two dashboards in one process (tests) never share counters.
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { TaskRecord } from '../cluster-state/index.js'
import { QUEUE_LOAD_HELP as LOAD_HELP, type QueueLoad } from '../client/index.js'
import type { ConcurrencyScopeStats } from '../locks/index.js'

export class DashboardMetrics {
  readonly registry = new Registry()
  readonly events = new Counter({
    name: 'flower_events_total',
    help: 'Number of events',
    labelNames: ['worker', 'type', 'task'],
    registers: [this.registry],
  })
  readonly runtime = new Histogram({
    name: 'flower_task_runtime_seconds',
    help: 'Task runtime',
    labelNames: ['worker', 'task'],
    registers: [this.registry],
  })
  readonly prefetchTime = new Gauge({
    name: 'flower_task_prefetch_time_seconds',
    help: 'The time the task spent waiting at the celery worker to be executed.',
    labelNames: ['worker', 'task'],
    registers: [this.registry],
  })
  readonly prefetched = new Gauge({
    name: 'flower_worker_prefetched_tasks',
    help: 'Number of tasks of given type prefetched at a worker',
    labelNames: ['worker', 'task'],
    registers: [this.registry],
  })
  readonly online = new Gauge({
    name: 'flower_worker_online',
    help: 'Worker online status',
    labelNames: ['worker'],
    registers: [this.registry],
  })
  readonly executing = new Gauge({
    name: 'flower_worker_number_of_currently_executing_tasks',
    help: 'Number of tasks currently executing at a worker',
    labelNames: ['worker'],
    registers: [this.registry],
  })
  readonly queueMessages = new Gauge({
    name: 'tsq_queue_messages',
    help: 'Messages ready in the queue (passive declare, list lengths with priority sub-lists, or files)',
    labelNames: ['queue'],
    registers: [this.registry],
  })
  readonly queueConsumers = new Gauge({
    name: 'tsq_queue_consumers',
    help: 'Consumers of the queue, where the broker tracks them',
    labelNames: ['queue'],
    registers: [this.registry],
  })
  readonly concurrencyBacklog = new Gauge({
    name: 'tsq_concurrency_backlog',
    help: 'Messages parked for a concurrency key, waiting for its turn',
    labelNames: ['scope', 'key'],
    registers: [this.registry],
  })
  readonly concurrencyRunning = new Gauge({
    name: 'tsq_concurrency_running',
    help: 'Running slots of a concurrency key, cluster-wide',
    labelNames: ['scope', 'key'],
    registers: [this.registry],
  })
  readonly concurrencyLimit = new Gauge({
    name: 'tsq_concurrency_limit',
    help: 'The concurrency limit per key of a scope (a task, unless scoped)',
    labelNames: ['scope'],
    registers: [this.registry],
  })
  readonly eventsReceived = new Counter({
    name: 'tsq_dashboard_events_received_total',
    help: 'Events the dashboard received: applied, unreadable, or refused (over the size or depth limit, dropped unparsed)',
    labelNames: ['outcome'],
    registers: [this.registry],
  })

  /**
   * Counts and gauge moves kept here between scrapes, by worker, then type
   * or task, then task: prom-client hashes its labels on every call, and at
   * the broker's event rate that was a tenth of the dashboard's time. A
   * scrape (text()) first hands them over, so what it reads is the same.
   */
  private readonly pendingEvents = new Map<string, Map<string, Map<string, { n: number }>>>()
  private readonly pendingPrefetched = new Map<string, Map<string, { delta: number; time: number | null }>>()
  private readonly pendingReceived = new Map<string, { n: number }>()

  /** tsq_dashboard_events_received_total{outcome}. */
  received(outcome: 'applied' | 'unreadable' | 'refused'): void {
    let cell = this.pendingReceived.get(outcome)
    if (!cell) this.pendingReceived.set(outcome, (cell = { n: 0 }))
    cell.n += 1
  }

  private prefetchCell(worker: string, task: string): { delta: number; time: number | null } {
    let byTask = this.pendingPrefetched.get(worker)
    if (!byTask) this.pendingPrefetched.set(worker, (byTask = new Map()))
    let cell = byTask.get(task)
    if (!cell) byTask.set(task, (cell = { delta: 0, time: null }))
    return cell
  }

  /** EventsState.event's metric updates, after the state applied the event. */
  observe(event: Record<string, unknown>, task: TaskRecord | undefined): void {
    const type = String(event.type)
    const worker = typeof event.hostname === 'string' ? event.hostname : ''
    if (type.startsWith('task-') && task) {
      const name = typeof event.name === 'string' && event.name ? event.name : typeof task.fields.name === 'string' ? task.fields.name : ''
      let byType = this.pendingEvents.get(worker)
      if (!byType) this.pendingEvents.set(worker, (byType = new Map()))
      let byTask = byType.get(type)
      if (!byTask) byType.set(type, (byTask = new Map()))
      const cell = byTask.get(name)
      if (cell) cell.n += 1
      else byTask.set(name, { n: 1 })
      const runtime = event.runtime
      if (typeof runtime === 'number' && runtime) this.runtime.labels(worker, name).observe(runtime)
      const started = task.fields.started
      const received = task.fields.received
      const eta = task.fields.eta
      if (type === 'task-received' && !eta && typeof received === 'number') this.prefetchCell(worker, name).delta += 1
      if (type === 'task-started' && !eta && typeof started === 'number' && typeof received === 'number') {
        const prefetch = this.prefetchCell(worker, name)
        prefetch.time = started - received
        prefetch.delta -= 1
      }
      if ((type === 'task-succeeded' || type === 'task-failed') && !eta && typeof started === 'number' && typeof received === 'number')
        this.prefetchCell(worker, name).time = 0
    }
    if (type === 'worker-online') this.online.labels(worker).set(1)
    if (type === 'worker-heartbeat') {
      this.online.labels(worker).set(1)
      if (typeof event.active === 'number') this.executing.labels(worker).set(event.active)
    }
    if (type === 'worker-offline') this.online.labels(worker).set(0)
  }

  /** Hands what observe() gathered to prom-client. */
  flush(): void {
    for (const [worker, byType] of this.pendingEvents)
      for (const [type, byTask] of byType) for (const [task, cell] of byTask) this.events.inc({ worker, type, task }, cell.n)
    this.pendingEvents.clear()
    for (const [worker, byTask] of this.pendingPrefetched) {
      for (const [task, cell] of byTask) {
        // A net 0 still creates the series, as the +1 and -1 it stands for did.
        if (cell.delta >= 0) this.prefetched.inc({ worker, task }, cell.delta)
        else this.prefetched.dec({ worker, task }, -cell.delta)
        if (cell.time !== null) this.prefetchTime.set({ worker, task }, cell.time)
      }
    }
    this.pendingPrefetched.clear()
    for (const [outcome, cell] of this.pendingReceived) this.eventsReceived.inc({ outcome }, cell.n)
    this.pendingReceived.clear()
  }

  /** Flower's remove_workers: a purged worker's series go. */
  removeWorkers(names: string[]): void {
    if (names.length === 0) return
    this.flush()
    for (const metric of [this.events, this.runtime, this.prefetchTime, this.prefetched, this.online, this.executing] as const) {
      for (const name of names) (metric as Gauge<string>).remove({ worker: name })
      // Series with more labels than worker are matched by their worker label.
      const values = (metric as unknown as { hashMap: Record<string, { labels: Record<string, string> }> }).hashMap
      for (const entry of Object.values(values ?? {}))
        if (names.includes(entry.labels.worker ?? '')) (metric as Gauge<string>).remove(entry.labels)
    }
  }

  /** The queue load figures (client/queue-load.ts): tsq_queue_load and its parts, for KEDA. */
  readonly load = (['load', 'ready', 'reserved', 'running', 'capacity', 'workers'] as const).map(
    (part) =>
      [
        part,
        new Gauge({
          name: `tsq_queue_${part}`,
          help: LOAD_HELP[part],
          labelNames: ['queue'],
          registers: [this.registry],
        }),
      ] as const,
  )

  setLoads(loads: readonly QueueLoad[]): void {
    for (const [part, gauge] of this.load) {
      gauge.reset()
      for (const l of loads) gauge.labels(l.queue).set(l[part])
    }
  }

  setQueue(name: string, messages: number, consumers: number | null): void {
    this.queueMessages.labels(name).set(messages)
    if (consumers !== null) this.queueConsumers.labels(name).set(consumers)
  }

  /** The store's keys as they are now (null: the store did not answer, the last reading stays); a key gone idle drops out. */
  setConcurrency(scopes: ConcurrencyScopeStats[] | null): void {
    if (scopes === null) return
    this.concurrencyBacklog.reset()
    this.concurrencyRunning.reset()
    this.concurrencyLimit.reset()
    for (const s of scopes) {
      if (s.limit !== null) this.concurrencyLimit.set({ scope: s.scope }, s.limit)
      for (const k of s.keys) {
        this.concurrencyBacklog.set({ scope: s.scope, key: k.key }, k.backlog)
        this.concurrencyRunning.set({ scope: s.scope, key: k.key }, k.running)
      }
    }
  }

  text(): Promise<string> {
    this.flush()
    return this.registry.metrics()
  }

  get contentType(): string {
    return this.registry.contentType
  }
}
