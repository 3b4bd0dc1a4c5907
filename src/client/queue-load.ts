// A scaling signal per queue: (ready + reserved + running) ÷ the capacity of
// the workers consuming it, from the broker (ready messages: a passive check,
// which on Redis sums Celery's priority lists) and the workers' remote-control
// replies (stats' max-concurrency, active_queues, active, reserved), which
// Celery's workers give as tsq's do. KEDA reads it as Prometheus text
// (tsq_queue_load) or as JSON (the metrics-api scaler's valueLocation).
import { MailboxClient, type NodeReply, type Transport } from '../transport/index.js'

export interface QueueLoad {
  queue: string
  /** Messages waiting in the broker (every priority list on Redis). */
  ready: number
  /** Prefetched by a worker, not started (ETA and countdown tasks not counted: they wait for time, not capacity). */
  reserved: number
  running: number
  /** The sum of the consuming workers' pool sizes (max-concurrency; an autoscaler's maximum). */
  capacity: number
  /** Workers consuming the queue. */
  workers: number
  /** (ready + reserved + running) ÷ capacity; with no capacity, the backlog itself, so scaling from zero sees work. */
  load: number
}

/** What one worker's replies say, as the load needs it. */
export interface WorkerView {
  hostname: string
  capacity: number
  queues: { name: string; exchange: string; routingKey: string }[]
  /** Delivery routing of each running task. */
  active: { exchange: string; routingKey: string }[]
  reserved: { exchange: string; routingKey: string }[]
}

const record = (value: unknown): Record<string, unknown> =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
const text = (value: unknown): string => (typeof value === 'string' ? value : '')

function routing(task: unknown): { exchange: string; routingKey: string } {
  const info = record(record(task).delivery_info)
  return { exchange: text(info.exchange), routingKey: text(info.routing_key) }
}

/** The replies of stats, active_queues, active and reserved, merged per worker. */
export function workerViews(replies: Record<'stats' | 'active_queues' | 'active' | 'reserved', NodeReply>): WorkerView[] {
  const names = new Set([...Object.keys(replies.stats), ...Object.keys(replies.active_queues)])
  return [...names].sort().map((hostname) => {
    const pool = record(record(replies.stats[hostname]).pool)
    const max = pool['max-concurrency']
    const queues = Array.isArray(replies.active_queues[hostname]) ? (replies.active_queues[hostname] as unknown[]) : []
    const list = (value: unknown) => (Array.isArray(value) ? value.map(routing) : [])
    return {
      hostname,
      capacity: typeof max === 'number' && max > 0 ? max : 0,
      queues: queues.map((q) => {
        const entry = record(q)
        const exchange = entry.exchange
        return {
          name: text(entry.name),
          exchange: typeof exchange === 'string' ? exchange : text(record(exchange).name),
          routingKey: text(entry.routing_key) || text(entry.name),
        }
      }),
      active: list(replies.active[hostname]),
      reserved: list(replies.reserved[hostname]),
    }
  })
}

/** Which of a worker's queues a task it holds came from: by binding, else by the routing key's name, else its only queue. */
function queueOf(worker: WorkerView, task: { exchange: string; routingKey: string }): string | null {
  const bound = worker.queues.find((q) => q.routingKey === task.routingKey && (!task.exchange || q.exchange === task.exchange))
  if (bound) return bound.name
  const named = worker.queues.find((q) => q.name === task.routingKey)
  if (named) return named.name
  return worker.queues.length === 1 ? worker.queues[0]!.name : null
}

/** The pure part: ready counts by queue and the workers' views in, one figure per queue out. */
export function queueLoads(ready: ReadonlyMap<string, number>, workers: readonly WorkerView[]): QueueLoad[] {
  const rows = new Map<string, QueueLoad>()
  const row = (queue: string): QueueLoad => {
    let r = rows.get(queue)
    if (!r) rows.set(queue, (r = { queue, ready: 0, reserved: 0, running: 0, capacity: 0, workers: 0, load: 0 }))
    return r
  }
  for (const [queue, n] of ready) row(queue).ready = n
  for (const worker of workers) {
    for (const name of new Set(worker.queues.map((q) => q.name))) {
      if (!name) continue
      const r = row(name)
      r.capacity += worker.capacity
      r.workers += 1
    }
    for (const task of worker.active) {
      const queue = queueOf(worker, task)
      if (queue) row(queue).running += 1
    }
    for (const task of worker.reserved) {
      const queue = queueOf(worker, task)
      if (queue) row(queue).reserved += 1
    }
  }
  for (const r of rows.values()) {
    const demand = r.ready + r.reserved + r.running
    r.load = r.capacity > 0 ? demand / r.capacity : demand
  }
  return [...rows.values()].sort((a, b) => a.queue.localeCompare(b.queue))
}

export interface SampleLoadOptions {
  /** Queues always reported (a worker's own, the app's default), besides those workers consume. */
  queues?: readonly string[]
  /** Seconds the broadcast waits for replies. */
  timeout?: number
}

/** One mailbox (one reply queue) per transport, however often it samples. */
const mailboxes = new WeakMap<Transport, MailboxClient>()

/** One sample on an open transport: four broadcasts at once, then a passive check of each queue. */
export async function sampleQueueLoad(transport: Transport, o: SampleLoadOptions = {}): Promise<QueueLoad[]> {
  let mailbox = mailboxes.get(transport)
  if (!mailbox) mailboxes.set(transport, (mailbox = new MailboxClient(transport)))
  const ask = async (method: string): Promise<NodeReply> => {
    const replies = await mailbox.broadcast(method, { timeout: o.timeout ?? 1, arguments: method === 'active' ? { safe: true } : {} })
    return Object.assign({}, ...replies) as NodeReply
  }
  const [stats, active_queues, active, reserved] = await Promise.all(['stats', 'active_queues', 'active', 'reserved'].map(ask))
  const workers = workerViews({ stats: stats!, active_queues: active_queues!, active: active!, reserved: reserved! })
  const names = new Set(o.queues ?? [])
  for (const worker of workers) for (const q of worker.queues) if (q.name) names.add(q.name)
  const ready = new Map<string, number>()
  for (const name of names) {
    const status = await transport.checkQueue?.(name).catch(() => null)
    ready.set(name, status?.messageCount ?? 0)
  }
  return queueLoads(ready, workers)
}

const escapeLabel = (value: string): string => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')

/** Each figure's help text, one gauge each (tsq_queue_<figure>). */
export const QUEUE_LOAD_HELP = {
  load: "(ready + reserved + running) / the consuming workers' capacity; with none, the backlog itself",
  ready: 'Messages ready in the broker, every priority list counted',
  reserved: 'Tasks prefetched by workers, not started (ETA tasks not counted)',
  running: 'Tasks running',
  capacity: "The consuming workers' pool sizes, summed",
  workers: 'Workers consuming the queue',
} as const

/** The figures as Prometheus text (a gauge each, labelled by queue), as KEDA's prometheus scaler queries them. */
export function queueLoadMetrics(loads: readonly QueueLoad[]): string {
  let out = ''
  for (const [part, help] of Object.entries(QUEUE_LOAD_HELP) as [keyof typeof QUEUE_LOAD_HELP, string][]) {
    out += `# HELP tsq_queue_${part} ${help}\n# TYPE tsq_queue_${part} gauge\n`
    for (const l of loads) out += `tsq_queue_${part}{queue="${escapeLabel(l.queue)}"} ${l[part]}\n`
  }
  return out
}

/** The figures as JSON for KEDA's metrics-api scaler: valueLocation `queues.<queue>.load`. */
export function queueLoadJson(loads: readonly QueueLoad[]): { queues: Record<string, Omit<QueueLoad, 'queue'>> } {
  const queues: Record<string, Omit<QueueLoad, 'queue'>> = {}
  for (const { queue, ...rest } of loads) queues[queue] = rest
  return { queues }
}
