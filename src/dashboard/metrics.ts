// Flower's Prometheus metrics (flower/events.py PrometheusMetrics), same names,
// help texts, labels and buckets, so Grafana dashboards built for Flower read
// tsq's; plus the queue depth and consumer gauges Flower cannot give without
// RabbitMQ's management plugin. A registry of its own, not prom-client's
// global one, so two dashboards in one process (tests) never share counters.
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { TaskRecord } from './state.js'

export class DashboardMetrics {
  readonly registry = new Registry()
  readonly events = new Counter({ name: 'flower_events_total', help: 'Number of events', labelNames: ['worker', 'type', 'task'], registers: [this.registry] })
  readonly runtime = new Histogram({ name: 'flower_task_runtime_seconds', help: 'Task runtime', labelNames: ['worker', 'task'], registers: [this.registry] })
  readonly prefetchTime = new Gauge({ name: 'flower_task_prefetch_time_seconds', help: 'The time the task spent waiting at the celery worker to be executed.', labelNames: ['worker', 'task'], registers: [this.registry] })
  readonly prefetched = new Gauge({ name: 'flower_worker_prefetched_tasks', help: 'Number of tasks of given type prefetched at a worker', labelNames: ['worker', 'task'], registers: [this.registry] })
  readonly online = new Gauge({ name: 'flower_worker_online', help: 'Worker online status', labelNames: ['worker'], registers: [this.registry] })
  readonly executing = new Gauge({ name: 'flower_worker_number_of_currently_executing_tasks', help: 'Number of tasks currently executing at a worker', labelNames: ['worker'], registers: [this.registry] })
  readonly queueMessages = new Gauge({ name: 'tsq_queue_messages', help: 'Messages ready in the queue (passive declare, list lengths with priority sub-lists, or files)', labelNames: ['queue'], registers: [this.registry] })
  readonly queueConsumers = new Gauge({ name: 'tsq_queue_consumers', help: 'Consumers of the queue, where the broker tracks them', labelNames: ['queue'], registers: [this.registry] })
  readonly eventsReceived = new Counter({ name: 'tsq_dashboard_events_received_total', help: 'Events the dashboard received, including unreadable ones', labelNames: ['outcome'], registers: [this.registry] })

  /** EventsState.event's metric updates, after the state applied the event. */
  observe(event: Record<string, unknown>, task: TaskRecord | undefined): void {
    const type = String(event.type)
    const worker = typeof event.hostname === 'string' ? event.hostname : ''
    if (type.startsWith('task-') && task) {
      const name = typeof event.name === 'string' && event.name ? event.name : typeof task.fields.name === 'string' ? task.fields.name : ''
      this.events.labels(worker, type, name).inc()
      const runtime = event.runtime
      if (typeof runtime === 'number' && runtime) this.runtime.labels(worker, name).observe(runtime)
      const started = task.fields.started
      const received = task.fields.received
      const eta = task.fields.eta
      if (type === 'task-received' && !eta && typeof received === 'number') this.prefetched.labels(worker, name).inc()
      if (type === 'task-started' && !eta && typeof started === 'number' && typeof received === 'number') {
        this.prefetchTime.labels(worker, name).set(started - received)
        this.prefetched.labels(worker, name).dec()
      }
      if ((type === 'task-succeeded' || type === 'task-failed') && !eta && typeof started === 'number' && typeof received === 'number') this.prefetchTime.labels(worker, name).set(0)
    }
    if (type === 'worker-online') this.online.labels(worker).set(1)
    if (type === 'worker-heartbeat') {
      this.online.labels(worker).set(1)
      if (typeof event.active === 'number') this.executing.labels(worker).set(event.active)
    }
    if (type === 'worker-offline') this.online.labels(worker).set(0)
  }

  /** Flower's remove_workers: a purged worker's series go. */
  removeWorkers(names: string[]): void {
    if (names.length === 0) return
    for (const metric of [this.events, this.runtime, this.prefetchTime, this.prefetched, this.online, this.executing] as const) {
      for (const name of names) (metric as Gauge<string>).remove({ worker: name })
      // Series with more labels than worker are matched by their worker label.
      const values = (metric as unknown as { hashMap: Record<string, { labels: Record<string, string> }> }).hashMap
      for (const entry of Object.values(values ?? {})) if (names.includes(entry.labels.worker ?? '')) (metric as Gauge<string>).remove(entry.labels)
    }
  }

  setQueue(name: string, messages: number, consumers: number | null): void {
    this.queueMessages.labels(name).set(messages)
    if (consumers !== null) this.queueConsumers.labels(name).set(consumers)
  }

  text(): Promise<string> {
    return this.registry.metrics()
  }

  get contentType(): string {
    return this.registry.contentType
  }
}
