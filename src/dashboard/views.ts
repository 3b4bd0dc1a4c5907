// What the pages show, shaped from the cluster: the status line's summary, a
// worker's row, a task's row and a task's page with its workflow. The UI's
// API and the live stream send these; Flower's API keeps Flower's own shapes.
import type { TaskRecord, WorkerRecord } from '../cluster-state/index.js'
import type { Cluster } from './cluster.js'
import { runQuery } from './flower-api.js'

/** A workflow shown on a task's page stops at this many tasks, or this deep. */
const MAX_FAMILY = 200
const MAX_FAMILY_DEPTH = 50

export function summary(cluster: Cluster): Record<string, unknown> {
  const state = cluster.state
  const workers = [...state.workers.values()]
  return {
    broker: cluster.displayUrl,
    connected: cluster.connected,
    events: state.eventCount,
    tasks: state.tasks.size,
    maxTasks: state.maxTasks,
    workersOnline: workers.filter((w) => state.alive(w)).length,
    workers: workers.length,
    unreadableEvents: cluster.unreadableEvents,
    refusedEvents: cluster.refusedEvents,
    lag: cluster.lastLag,
    // What the held state takes (the heap in use) beside what the process holds (V8 keeps freed pages a while).
    heapUsedMb: Math.round(process.memoryUsage().heapUsed / 1e5) / 10,
  }
}

/** `inspect stats`'s pool, as a worker reports it. */
interface PoolStats {
  'max-concurrency'?: number
  implementation?: unknown
  processes?: unknown
  timeouts?: unknown
  'put-guarded-by-semaphore'?: unknown
}

/**
 * The pool's kind (`prefork`, `threads`, `solo`, `eventlet`), or null where the stats do not tell.
 * Celery 5.3 names it (`implementation`: `celery.concurrency.prefork:TaskPool`); 5.2.6, and tsq
 * that answers as 5.2.6, only by the keys each pool's `_get_info` gives (celery/concurrency/*.py).
 */
export function poolKind(pool: PoolStats): string | null {
  if (typeof pool.implementation === 'string') {
    const kind = pool.implementation.replace(/^celery\.concurrency\.|:TaskPool$/g, '')
    return kind === 'thread' ? 'threads' : kind
  }
  if ('writes' in pool) return 'prefork'
  if ('threads' in pool) return 'threads'
  if ('free-threads' in pool || 'running-threads' in pool) return 'eventlet'
  if (Array.isArray(pool.processes) && pool['put-guarded-by-semaphore'] === true && Array.isArray(pool.timeouts) && !pool.timeouts.length)
    return 'solo'
  return null
}

export function workerSummary(cluster: Cluster, w: WorkerRecord): Record<string, unknown> {
  const stats = (w.inspect.stats ?? {}) as { pool?: PoolStats; total?: Record<string, number> }
  const queues = Array.isArray(w.inspect.active_queues)
    ? (w.inspect.active_queues as { name?: string }[]).map((q) => q.name).filter(Boolean)
    : []
  const pool = stats.pool && typeof stats.pool === 'object' ? stats.pool : {}
  return {
    hostname: w.hostname,
    online: cluster.state.alive(w),
    software: [w.sw_ident, w.sw_ver].filter(Boolean).join(' ') || null,
    pid: w.pid,
    pool: poolKind(pool),
    concurrency: pool['max-concurrency'] ?? (Array.isArray(pool.processes) ? pool.processes.length : null),
    active: w.active,
    processed: w.processed,
    succeeded: w.counter['task-succeeded'] ?? 0,
    failed: w.counter['task-failed'] ?? 0,
    retried: w.counter['task-retried'] ?? 0,
    received: w.counter['task-received'] ?? 0,
    loadavg: w.loadavg,
    heartbeat: w.heartbeats[w.heartbeats.length - 1] ?? null,
    offlineAt: w.offlineAt,
    queues,
  }
}

/** The workers page: every worker's row. */
export function workersView(cluster: Cluster): Record<string, unknown> {
  return { workers: [...cluster.state.workers.values()].map((w) => workerSummary(cluster, w)) }
}

/** The tasks page: one page of rows by Flower's search arguments, the filters' choices, and the counts. */
export function tasksView(cluster: Cluster, query: URLSearchParams): Record<string, unknown> {
  const page = runQuery(cluster, query)
  const state = cluster.state
  return {
    rows: page.tasks.map((t) => taskRow(t)),
    filtered: page.filtered,
    total: page.total,
    taskTypes: [...state.taskTypes].sort(),
    workers: [...state.workers.keys()].sort(),
  }
}

/** The queues and overview pages: each queue's samples, the throughput, and the summary. */
export function overviewView(cluster: Cluster): Record<string, unknown> {
  const queues: Record<string, unknown> = {}
  for (const [name, samples] of cluster.queueHistory) queues[name] = samples
  return { throughput: cluster.throughput, queues, summary: summary(cluster) }
}

export function taskRow(t: TaskRecord): Record<string, unknown> {
  const f = t.fields
  return {
    uuid: t.uuid,
    name: f.name ?? null,
    state: t.state,
    args: f.args ?? null,
    kwargs: f.kwargs ?? null,
    result: f.result ?? null,
    received: f.received ?? null,
    started: f.started ?? null,
    runtime: f.runtime ?? null,
    worker: t.worker,
    timestamp: f.timestamp ?? null,
  }
}

/** A task's page: its fields, its events, its parent, root and children, and the workflow (chain, chord) under its root. */
export function taskDetail(cluster: Cluster, task: TaskRecord): Record<string, unknown> {
  const state = cluster.state
  const brief = (uuid: string | null | undefined): Record<string, unknown> | null => {
    if (!uuid) return null
    const t = state.tasks.get(uuid)
    return t ? { uuid, name: t.fields.name ?? null, state: t.state } : { uuid, name: null, state: null }
  }
  const children = task.children.map((c) => brief(c))
  const rootId = typeof task.fields.root_id === 'string' ? task.fields.root_id : task.uuid
  const family: Record<string, unknown>[] = []
  const walk = (uuid: string, depth: number): void => {
    if (family.length >= MAX_FAMILY || depth > MAX_FAMILY_DEPTH) return
    const t = state.tasks.get(uuid)
    family.push({ ...brief(uuid), depth, group: t?.fields.group ?? null })
    for (const child of t?.children ?? []) walk(child, depth + 1)
  }
  walk(rootId, 0)
  return {
    task: state.taskAsDict(task),
    timeline: task.timeline,
    parent: brief(task.fields.parent_id as string | undefined),
    root: brief(rootId),
    children,
    family,
  }
}
