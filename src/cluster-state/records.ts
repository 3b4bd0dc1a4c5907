// What the cluster state holds of a task and of a worker, what it tells its
// listeners, and what it saves for the dashboard's --persistent. Pure types and
// the few constants that say what a record means (Celery's as_dict fields, the
// finished states, a worker's liveness).
import { heartbeatExpires } from '../protocol/index.js'
import type { SearchDocument } from './search.js'
import type { Block } from './task-table.js'

/** States after which a task is done with: Celery's READY_STATES and REJECTED. The first of these to go past max tasks. */
export const FINISHED_STATES: ReadonlySet<string> = new Set(['SUCCESS', 'FAILURE', 'REVOKED', 'REJECTED'])

/** The fields of Celery's Task.as_dict, in its order: the JSON shape of Flower's task API. */
export const TASK_FIELDS = [
  'uuid',
  'name',
  'state',
  'received',
  'sent',
  'started',
  'rejected',
  'succeeded',
  'failed',
  'retried',
  'revoked',
  'args',
  'kwargs',
  'eta',
  'expires',
  'retries',
  'worker',
  'result',
  'exception',
  'timestamp',
  'runtime',
  'traceback',
  'exchange',
  'routing_key',
  'clock',
  'client',
  'root',
  'root_id',
  'parent',
  'parent_id',
  'children',
] as const

export interface TimelineEntry {
  type: string
  timestamp: number
  hostname: string | null
}

export interface TaskRecord {
  uuid: string
  state: string
  clock: number
  /** Hostname of the worker that last handled it. */
  worker: string | null
  children: string[]
  fields: Record<string, unknown>
  timeline: TimelineEntry[]
  /** Built when a search needs it, after the task last changed (most events are never searched between). */
  doc: SearchDocument | null
  /** Its place in the finished order, or 0 while not finished. */
  finishedSeq: number
  /** Where the task table holds it (null once dropped). */
  block: Block | null
  slot: number
}

export interface WorkerRecord {
  hostname: string
  pid: number | null
  freq: number
  /** local_received of the last heartbeats (Celery keeps four). */
  heartbeats: number[]
  clock: number
  active: number | null
  processed: number | null
  loadavg: number[] | null
  sw_ident: string | null
  sw_ver: string | null
  sw_sys: string | null
  /** When it went offline (local time, seconds), or null. */
  offlineAt: number | null
  /** Events from it, by type (Flower's state.counter). */
  counter: Record<string, number>
  /** The last `inspect` answers (Flower's Inspector): stats, registered, active_queues, ... and timestamp. */
  inspect: Record<string, unknown>
}

/** Celery's Worker.alive: a heartbeat (or a task event) within two heartbeat intervals, and none since it went offline. */
export function workerAlive(worker: WorkerRecord, now: number): boolean {
  const last = worker.heartbeats[worker.heartbeats.length - 1]
  if (last === undefined) return false
  return now < heartbeatExpires(last, worker.freq)
}

export type StateChange =
  { kind: 'task'; task: TaskRecord; created: boolean } | { kind: 'worker'; worker: WorkerRecord } | { kind: 'dropped'; uuid: string }

export interface PersistedState {
  version: 1
  eventCount: number
  taskCount: number
  workers: WorkerRecord[]
  tasks: Omit<TaskRecord, 'doc' | 'finishedSeq' | 'block' | 'slot'>[]
  finished: string[]
}
