// The cluster as events tell it, the one model `tsq events` and the dashboard
// both read: Celery's events.State (workers, tasks, the merge rules for events
// that arrive out of order) with Flower's additions (per-worker event
// counters, a search index), bounded by max tasks with the oldest *finished*
// task dropped first, so a task still running is never forgotten while a
// finished one could go instead.
// No I/O: events come in through apply(), listeners hear what changed.
import { statePrecedence } from '../protocol/index.js'
import {
  FINISHED_STATES,
  TASK_FIELDS,
  workerAlive,
  type PersistedState,
  type StateChange,
  type TaskRecord,
  type WorkerRecord,
} from './records.js'
import { tablePlan, type TaskPage, type TaskQuery } from './task-query.js'
import { TaskTable } from './task-table.js'

const TASK_EVENT_STATE: Record<string, string> = {
  sent: 'PENDING',
  received: 'RECEIVED',
  started: 'STARTED',
  succeeded: 'SUCCESS',
  failed: 'FAILURE',
  retried: 'RETRY',
  revoked: 'REVOKED',
  rejected: 'REJECTED',
}

const KNOWN_TYPES = new Map<string, readonly [string, string]>(
  [
    ...Object.keys(TASK_EVENT_STATE).map((s) => ['task', s] as const),
    ...['online', 'heartbeat', 'offline'].map((s) => ['worker', s] as const),
  ].map(([g, s]) => [`${g}-${s}`, [g, s] as const]),
)

/** Celery's Task.merge_rules: fields a logically earlier event may still set. */
const RECEIVED_KEEPS = new Set(['name', 'args', 'kwargs', 'parent_id', 'root_id', 'retries', 'eta', 'expires'])

/** Event fields that are not task attributes (Celery stores them but as_dict leaves them out). */
const NOT_STORED = new Set(['type', 'hostname', 'pid', 'utcoffset', 'local_received', 'uuid'])

/** A task's timeline keeps at most this many events. */
const MAX_TIMELINE = 32

export interface ClusterStateOptions {
  maxTasks: number
  now?: () => number
}

const numberOr = (value: unknown, fallback: number): number => (typeof value === 'number' && Number.isFinite(value) ? value : fallback)

export class ClusterState {
  eventCount = 0
  taskCount = 0
  readonly tasks = new Map<string, TaskRecord>()
  /** The same tasks in arrival order, for the queries. */
  private readonly table = new TaskTable()
  readonly workers = new Map<string, WorkerRecord>()
  /**
   * Finished tasks in the order they finished, the first dropped first. An
   * array with a head index, not a Set: taking the first of a Set whose front
   * was deleted walks every deleted slot (V8), which made each drop O(n).
   * Entries whose task finished again later, or went, are stale and skipped.
   */
  private finished: { uuid: string; seq: number }[] = []
  private finishedHead = 0
  private finishSeq = 0
  // How many tasks have each name, worker and state: the count of a page
  // filtered by one of them, without a pass over the tasks. Counts, not sets
  // of the tasks: a set moved on every event cost more than the filters won.
  private readonly byName = new Map<string, number>()
  private readonly byWorker = new Map<string, number>()
  private readonly byState = new Map<string, number>()
  /** Children seen before their parent (Celery's _tasks_to_resolve). */
  private readonly orphans = new Map<string, Set<string>>()
  readonly taskTypes = new Set<string>()
  private readonly listeners = new Set<(change: StateChange) => void>()
  readonly maxTasks: number
  private readonly now: () => number

  constructor(options: ClusterStateOptions) {
    this.maxTasks = Math.max(1, options.maxTasks)
    this.now = options.now ?? (() => Date.now() / 1000)
  }

  onChange(listener: (change: StateChange) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  private emit(change: StateChange): void {
    for (const listener of this.listeners) listener(change)
  }

  /**
   * One event as the receiver decoded it. Returns false for what is not an
   * event (no type, a task event without uuid): ignored, never fatal.
   */
  apply(event: Record<string, unknown>): boolean {
    const type = event.type
    if (typeof type !== 'string' || !type.includes('-')) return false
    // Celery's own types are split once (two strings less per event); others as they come.
    let parts = KNOWN_TYPES.get(type)
    if (!parts) {
      const dash = type.indexOf('-')
      parts = [type.slice(0, dash), type.slice(dash + 1)]
    }
    const [group, subject] = parts
    const hostname = typeof event.hostname === 'string' && event.hostname ? event.hostname : null
    if (group === 'task' && (typeof event.uuid !== 'string' || !event.uuid)) return false
    if (group !== 'task' && group !== 'worker') return false
    if (group === 'worker' && !hostname) return false
    this.eventCount += 1
    const timestamp = numberOr(event.timestamp, this.now())
    const localReceived = numberOr(event.local_received, this.now())
    if (hostname) {
      const worker = this.workerFor(hostname)
      worker.counter[type] = (worker.counter[type] ?? 0) + 1
    }
    if (group === 'worker') {
      if (!hostname) return false
      this.workerEvent(this.workerFor(hostname), subject, localReceived, event)
      return true
    }
    this.taskEvent(event.uuid as string, type, subject, hostname, timestamp, localReceived, event)
    return true
  }

  private workerFor(hostname: string): WorkerRecord {
    let worker = this.workers.get(hostname)
    if (!worker) {
      worker = {
        hostname,
        pid: null,
        freq: 60,
        heartbeats: [],
        clock: 0,
        active: null,
        processed: null,
        loadavg: null,
        sw_ident: null,
        sw_ver: null,
        sw_sys: null,
        offlineAt: null,
        counter: {},
        inspect: {},
      }
      this.workers.set(hostname, worker)
    }
    return worker
  }

  private workerEvent(worker: WorkerRecord, subject: string, localReceived: number, event: Record<string, unknown>): void {
    if (typeof event.pid === 'number') worker.pid = event.pid
    if (typeof event.freq === 'number' && event.freq > 0) worker.freq = event.freq
    if (typeof event.clock === 'number') worker.clock = event.clock
    if (typeof event.active === 'number') worker.active = event.active
    if (typeof event.processed === 'number') worker.processed = event.processed
    if (Array.isArray(event.loadavg)) worker.loadavg = event.loadavg.filter((n): n is number => typeof n === 'number')
    for (const key of ['sw_ident', 'sw_ver', 'sw_sys'] as const) if (typeof event[key] === 'string') worker[key] = event[key] as string
    if (subject === 'offline') {
      worker.heartbeats = []
      worker.offlineAt = this.now()
    } else {
      this.beat(worker, localReceived)
      worker.offlineAt = null
    }
    this.emit({ kind: 'worker', worker })
  }

  private beat(worker: WorkerRecord, localReceived: number): void {
    const hb = worker.heartbeats
    if (hb.length > 3) hb.shift()
    // Events of one batch arrive with one local_received: an equal time goes
    // last, as bisect.insort puts it, without a sort.
    if (hb.length === 0 || localReceived >= hb[hb.length - 1]!) hb.push(localReceived)
    else {
      hb.push(localReceived)
      hb.sort((a, b) => a - b)
    }
  }

  private taskEvent(
    uuid: string,
    type: string,
    subject: string,
    hostname: string | null,
    timestamp: number,
    localReceived: number,
    event: Record<string, unknown>,
  ): void {
    let task = this.tasks.get(uuid)
    const created = !task
    if (!task) {
      task = {
        uuid,
        state: 'PENDING',
        clock: 0,
        worker: null,
        children: [],
        fields: {},
        timeline: [],
        doc: null,
        finishedSeq: 0,
        block: null,
        slot: 0,
      }
      this.tasks.set(uuid, task)
      this.table.add(task)
      const waiting = this.orphans.get(uuid)
      if (waiting) {
        task.children.push(...waiting)
        this.orphans.delete(uuid)
      }
    }
    // What the filter indexes hold it under ('' for a new task, held under none yet).
    const beforeName = created ? '' : typeof task.fields.name === 'string' ? task.fields.name : ''
    const beforeState = created ? '' : task.state
    const beforeWorker = created ? '' : (task.worker ?? '')
    if (subject === 'sent') task.fields.client = hostname
    else if (hostname) {
      task.worker = hostname
      const worker = this.workerFor(hostname)
      // Any task event is a sign of life from its worker, as in Celery's State.
      if (worker.offlineAt === null) this.beat(worker, localReceived)
    }
    if (subject === 'received') this.taskCount += 1
    let state = TASK_EVENT_STATE[subject]
    if (state !== undefined) task.fields[subject] = timestamp
    else state = subject.toUpperCase()
    // A logically earlier event arriving late leaves the state as it is; a
    // late task-received still brings what only it carries (Celery's merge_rules).
    const late = state !== 'RETRY' && task.state !== 'RETRY' && statePrecedence(state) > statePrecedence(task.state)
    const keepsOnly = late && state === 'RECEIVED'
    // Copied straight in, key by key: no pairs array or interim object per
    // event, whose garbage was the largest cost at tens of thousands a second.
    const into = task.fields
    for (const key in event) {
      if (NOT_STORED.has(key) || (keepsOnly && !RECEIVED_KEEPS.has(key))) continue
      into[key] = event[key]
    }
    if (!late) {
      task.state = state
      into.timestamp = timestamp
    }
    if (typeof event.clock === 'number') task.clock = event.clock
    task.timeline.push({ type, timestamp, hostname })
    if (task.timeline.length > MAX_TIMELINE) task.timeline.splice(1, 1)
    const name = typeof task.fields.name === 'string' ? task.fields.name : undefined
    if (name) this.taskTypes.add(name)
    const parent = typeof task.fields.parent_id === 'string' ? task.fields.parent_id : null
    if (parent && parent !== uuid) {
      const p = this.tasks.get(parent)
      if (p) {
        if (!p.children.includes(uuid)) p.children.push(uuid)
      } else {
        const set = this.orphans.get(parent) ?? new Set<string>()
        set.add(uuid)
        this.orphans.set(parent, set)
        // A parent that never shows (sent before the dashboard started, or
        // dropped) must not hold its children's ids for ever: the oldest go.
        while (this.orphans.size > this.maxTasks) this.orphans.delete(this.orphans.keys().next().value!)
      }
    }
    this.reindex(task, beforeName, beforeState, beforeWorker)
    // Its search text is built when a search or warm() needs it, not here:
    // at the broker's rate, intake is what must keep up.
    if (FINISHED_STATES.has(task.state)) {
      if (task.finishedSeq === 0) this.markFinished(task)
    } else task.finishedSeq = 0
    this.emit({ kind: 'task', task, created })
    if (created) this.enforceLimit(uuid)
  }

  private reindex(task: TaskRecord, name: string, state: string, worker: string): void {
    move(this.byName, name, typeof task.fields.name === 'string' ? task.fields.name : '')
    move(this.byState, state, task.state)
    move(this.byWorker, worker, task.worker ?? '')
    task.doc = null
    this.table.touch(task)
  }

  private markFinished(task: TaskRecord): void {
    task.finishedSeq = ++this.finishSeq
    this.finished.push({ uuid: task.uuid, seq: task.finishedSeq })
  }

  /** The oldest finished task still held, or undefined. */
  private oldestFinished(): string | undefined {
    while (this.finishedHead < this.finished.length) {
      const entry = this.finished[this.finishedHead]!
      const task = this.tasks.get(entry.uuid)
      if (task && task.finishedSeq === entry.seq) return entry.uuid
      this.finishedHead += 1
    }
    return undefined
  }

  private compactFinished(): void {
    if (this.finishedHead > 4096 && this.finishedHead * 2 > this.finished.length) {
      this.finished = this.finished.slice(this.finishedHead)
      this.finishedHead = 0
    }
  }

  /** Drops the oldest finished task, or the oldest of all when none has finished, until within --max-tasks. */
  private enforceLimit(keep: string): void {
    while (this.tasks.size > this.maxTasks) {
      let victim = this.oldestFinished()
      if (victim === undefined) {
        for (const id of this.tasks.keys()) {
          if (id !== keep) {
            victim = id
            break
          }
        }
      }
      if (victim === undefined) return
      this.drop(victim)
    }
    this.compactFinished()
  }

  private drop(uuid: string): void {
    const task = this.tasks.get(uuid)
    if (!task) return
    this.tasks.delete(uuid)
    this.table.remove(task)
    task.finishedSeq = 0
    move(this.byName, typeof task.fields.name === 'string' ? task.fields.name : '', '')
    move(this.byState, task.state, '')
    move(this.byWorker, task.worker ?? '', '')
    this.emit({ kind: 'dropped', uuid })
  }

  /** Workers that went offline more than `seconds` ago leave the list (--purge-offline-workers). */
  purgeOfflineWorkers(seconds: number): string[] {
    const now = this.now()
    const gone: string[] = []
    for (const [name, worker] of this.workers) {
      const lastSeen = worker.offlineAt ?? worker.heartbeats[worker.heartbeats.length - 1] ?? null
      if (!workerAlive(worker, now) && lastSeen !== null && now - lastSeen > seconds) {
        this.workers.delete(name)
        gone.push(name)
      }
    }
    return gone
  }

  /** How much each structure holds: all of them stay within a few times --max-tasks. */
  sizes(): { tasks: number; finishedQueue: number; orphans: number; byName: number; byState: number; byWorker: number } {
    const count = (index: Map<string, number>): number => {
      let n = 0
      for (const c of index.values()) n += c
      return n
    }
    return {
      tasks: this.tasks.size,
      finishedQueue: this.finished.length,
      orphans: this.orphans.size,
      byName: count(this.byName),
      byState: count(this.byState),
      byWorker: count(this.byWorker),
    }
  }

  alive(worker: WorkerRecord): boolean {
    return workerAlive(worker, this.now())
  }

  /** Builds the search texts of tasks that changed, for up to `budgetMs`: the dashboard calls it while events are few. */
  warm(budgetMs: number): void {
    this.table.warm(budgetMs)
  }

  /** Flower's search_tasks: filters, the query, the sort, and one page. */
  queryTasks(q: TaskQuery): TaskPage {
    const plan = tablePlan(q)
    // With no search and no time range, one filter's count is its counter.
    const filters = [
      [this.byName, plan.name],
      [this.byWorker, plan.worker],
      [this.byState, plan.state],
    ] as const
    const given = filters.filter(([, value]) => value !== null)
    if (given.length === 1 && plan.test === null && plan.receivedStart === null && plan.receivedEnd === null)
      plan.known = given[0]![0].get(given[0]![1]!) ?? 0
    const found = this.table.query(plan)
    return { tasks: found.tasks, filtered: plan.count ? found.filtered : null, total: this.tasks.size }
  }

  /** Celery's Task.as_dict with Flower's worker hostname. */
  taskAsDict(task: TaskRecord): Record<string, unknown> {
    const out: Record<string, unknown> = {}
    for (const field of TASK_FIELDS) {
      if (field === 'uuid') out.uuid = task.uuid
      else if (field === 'state') out.state = task.state
      else if (field === 'worker') out.worker = task.worker
      else if (field === 'clock') out.clock = task.clock
      else if (field === 'children') out.children = task.children.filter((id) => this.tasks.has(id))
      else if (field === 'root') out.root = task.fields.root_id ?? null
      else if (field === 'parent') out.parent = task.fields.parent_id ?? null
      else out[field] = task.fields[field] ?? null
    }
    return out
  }

  /** Everything, for --persistent. */
  snapshot(): PersistedState {
    return {
      version: 1,
      eventCount: this.eventCount,
      taskCount: this.taskCount,
      workers: [...this.workers.values()],
      tasks: [...this.tasks.values()].map(({ doc: _doc, finishedSeq: _seq, block: _block, slot: _slot, ...rest }) => rest),
      finished: this.finished
        .slice(this.finishedHead)
        .filter((e) => this.tasks.get(e.uuid)?.finishedSeq === e.seq)
        .map((e) => e.uuid),
    }
  }

  restore(saved: PersistedState): void {
    this.eventCount = saved.eventCount
    this.taskCount = saved.taskCount
    for (const worker of saved.workers) this.workers.set(worker.hostname, worker)
    for (const t of saved.tasks) {
      const task: TaskRecord = { ...t, doc: null, finishedSeq: 0, block: null, slot: 0 }
      this.tasks.set(task.uuid, task)
      this.table.add(task)
      const name = typeof task.fields.name === 'string' ? task.fields.name : ''
      if (name) this.taskTypes.add(name)
      this.reindex(task, '', '', '')
    }
    for (const id of saved.finished) {
      const task = this.tasks.get(id)
      if (task && task.finishedSeq === 0) this.markFinished(task)
    }
    while (this.tasks.size > this.maxTasks) {
      const victim: string | undefined = this.oldestFinished() ?? this.tasks.keys().next().value
      if (victim === undefined) break
      this.drop(victim)
    }
  }
}

/** Moves a task from one count to another; from is '' for one not counted yet, to '' for one that goes. */
function move(index: Map<string, number>, from: string, to: string): void {
  if (from === to) return
  if (from) {
    const n = (index.get(from) ?? 0) - 1
    if (n > 0) index.set(from, n)
    else index.delete(from)
  }
  if (to) index.set(to, (index.get(to) ?? 0) + 1)
}
