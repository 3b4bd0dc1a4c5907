// Events (spec §5): the flat event body in Celery's key order, routing keys,
// and the single-or-batched bodies receivers must accept.

import { dumps, loads, type LoadsOptions } from '../codecs/kombu-json.js'
import { MalformedMessageError } from '../errors.js'
import { checkEventText } from './event-limits.js'
import { comparePyStr, PyFloat } from '../codecs/py-types.js'
import { pyStr } from '../codecs/python-repr.js'
import { escapeControl } from '../secrets.js'

export interface EventBase {
  hostname: string
  /** Hours, with the opposite sign of the ISO offset (see utcoffsetHours). */
  utcoffset: number
  pid: number
  /** The sender's Lamport clock, already forwarded; null for a "blind" event. */
  clock: number | null
  /** Unix seconds (float). Used only when fields carry no timestamp of their own. */
  timestamp: number
}

/**
 * celery.events.Event + EventDispatcher.publish: hostname, utcoffset, pid,
 * clock, the type's fields, then timestamp and type. A timestamp given in
 * fields keeps its place, as in Celery.
 */
export function buildEvent(type: string, fields: Record<string, unknown>, base: EventBase): Record<string, unknown> {
  const event: Record<string, unknown> = {
    hostname: base.hostname,
    utcoffset: base.utcoffset,
    pid: base.pid,
    clock: base.clock,
  }
  Object.assign(event, fields)
  if (!('timestamp' in fields)) event.timestamp = base.timestamp
  event.type = type
  return event
}

/** `task-succeeded` → `task.succeeded`. */
export function eventRoutingKey(type: string): string {
  return type.replaceAll('-', '.')
}

/** The group of an event type (`task` for `task-started`). */
export function eventGroup(type: string): string {
  const i = type.indexOf('-')
  return i < 0 ? type : type.slice(0, i)
}

/** Routing key of a buffered batch: `task.multi`. */
export function batchRoutingKey(group: string): string {
  return `${group}.multi`
}

/**
 * Python's `utcoffset()`: `time.timezone // 3600` (or altzone in DST), i.e.
 * hours west of UTC, floored. getTimezoneOffset() already includes DST.
 */
export function utcoffsetHours(at: Date = new Date()): number {
  return Math.floor(at.getTimezoneOffset() / 60)
}

/** Celery's heart.load_average: each value rounded up to 2 decimals. */
export function roundLoadavg(values: readonly number[]): [number, number, number] {
  const r = (x: number | undefined): number => Math.ceil((x ?? 0) * 100) / 100
  return [r(values[0]), r(values[1]), r(values[2])]
}

export interface WorkerSoftware {
  sw_ident: string
  sw_ver: string
  sw_sys: string
}

/** What Celery 5.2.6 sends; a tsq worker may pass its own ident/version instead. */
export const WORKER_SW: Readonly<WorkerSoftware> = { sw_ident: 'py-celery', sw_ver: '5.2.6', sw_sys: 'Linux' }

export function workerSoftware(ident: string, version: string, system: string): WorkerSoftware {
  return { sw_ident: ident, sw_ver: version, sw_sys: system }
}

/** Fields of worker-online/-heartbeat/-offline, in Celery's order. */
export function workerEventFields(f: {
  freq: number
  active: number
  processed: number
  loadavg: readonly number[]
  sw: WorkerSoftware
}): Record<string, unknown> {
  return {
    freq: f.freq,
    active: f.active,
    processed: f.processed,
    loadavg: roundLoadavg(f.loadavg),
    sw_ident: f.sw.sw_ident,
    sw_ver: f.sw.sw_ver,
    sw_sys: f.sw.sw_sys,
  }
}

/** Field order of each event type after pid/clock (spec §5.3). */
export const EVENT_FIELDS: Readonly<Record<string, readonly string[]>> = {
  'task-sent': ['uuid', 'root_id', 'parent_id', 'name', 'args', 'kwargs', 'retries', 'eta', 'expires', 'queue', 'exchange', 'routing_key'],
  'task-received': ['uuid', 'name', 'args', 'kwargs', 'root_id', 'parent_id', 'retries', 'eta', 'expires'],
  'task-started': ['uuid'],
  'task-succeeded': ['uuid', 'result', 'runtime'],
  'task-failed': ['uuid', 'exception', 'traceback'],
  'task-retried': ['uuid', 'exception', 'traceback'],
  'task-rejected': ['uuid', 'requeue'],
  'task-revoked': ['uuid', 'terminated', 'signum', 'expired'],
  'task-cancelled': ['uuid'],
  'worker-online': ['freq', 'active', 'processed', 'loadavg', 'sw_ident', 'sw_ver', 'sw_sys'],
  'worker-heartbeat': ['freq', 'active', 'processed', 'loadavg', 'sw_ident', 'sw_ver', 'sw_sys'],
  'worker-offline': ['freq', 'active', 'processed', 'loadavg', 'sw_ident', 'sw_ver', 'sw_sys'],
  'worker-elect': ['id', 'topic', 'action', 'cver'],
  'worker-elect-ack': ['id'],
}

/** Reorder fields to the type's Celery order; unknown keys follow in their own order. */
export function orderEventFields(type: string, fields: Record<string, unknown>): Record<string, unknown> {
  const order = EVENT_FIELDS[type] ?? []
  const out: Record<string, unknown> = {}
  for (const k of order) if (k in fields) out[k] = fields[k]
  for (const [k, v] of Object.entries(fields)) if (!(k in out)) out[k] = v
  return out
}

// Fields Python always sends as floats, so `2` must be written `2.0`.
const FLOAT_FIELDS = new Set(['timestamp', 'freq', 'runtime', 'local_received'])

function floatify(event: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(event)) {
    if (typeof v === 'number' && FLOAT_FIELDS.has(k)) out[k] = new PyFloat(v)
    else if (k === 'loadavg' && Array.isArray(v)) out[k] = v.map((x) => (typeof x === 'number' ? new PyFloat(x) : x))
    else out[k] = v
  }
  return out
}

/** Body of one event, with Celery's float fields written as floats. */
export function encodeEvent(event: Record<string, unknown>): string {
  return dumps(floatify(event))
}

/** Body of a `<group>.multi` batch: a JSON list. */
export function encodeEventBatch(events: readonly Record<string, unknown>[]): string {
  return dumps(events.map(floatify))
}

/** Receivers accept both a single event object and a batched list; a body over the event limits throws EventLimitError before it is parsed. */
export function decodeEvents(text: string, options: LoadsOptions = {}): Record<string, unknown>[] {
  checkEventText(text)
  let v: unknown
  try {
    v = loads(text, options)
  } catch (cause) {
    throw new MalformedMessageError(`event body is not valid JSON: ${(cause as Error).message}`, { cause })
  }
  const isEvent = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === 'object' && !Array.isArray(x)
  if (isEvent(v)) return [v]
  if (Array.isArray(v) && v.every(isEvent)) return v
  throw new MalformedMessageError('event body must be an object or a list of objects')
}

/** celery.events.state.heartbeat_expires: a worker is alive until its last heartbeat + freq × 200 %. */
export function heartbeatExpires(lastHeartbeat: number, freq: number): number {
  return lastHeartbeat + freq * 2
}

// ---- `celery events --dump` (celery/events/dumper.py) ------------------------

const HUMAN_TYPES: Readonly<Record<string, string>> = {
  'worker-offline': 'shutdown',
  'worker-online': 'started',
  'worker-heartbeat': 'heartbeat',
}

/** Python's str(datetime.utcfromtimestamp(t)): microseconds only when there are some. */
export function utcTimestampText(seconds: number): string {
  const whole = Math.floor(seconds)
  const micros = Math.round((seconds - whole) * 1e6)
  const d = new Date((whole + Math.floor(micros / 1e6)) * 1000)
  const p = (n: number, w = 2) => String(n).padStart(w, '0')
  const text = `${d.getUTCFullYear()}-${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())}`
  return micros % 1e6 === 0 ? text : `${text}.${p(micros % 1e6, 6)}`
}

/**
 * One line as Celery's Dumper prints an event: `<host> [<utc time>] <type>:
 * <fields>`, fields sorted and shown as Python's str(); a task event names the
 * task as its task-received (or task-sent) event introduced it, which
 * `taskNames` remembers across calls.
 */
export function dumpEventLine(event: Record<string, unknown>, taskNames: Map<string, string>): string {
  const ev = { ...event }
  const take = (key: string): unknown => {
    const v = ev[key]
    delete ev[key]
    return v
  }
  const timestamp = utcTimestampText(Number(take('timestamp')))
  const type = String(take('type')).toLowerCase()
  const hostname = pyStr(take('hostname'))
  const human = HUMAN_TYPES[type] ?? type.replaceAll('-', ' ')
  let task: string | null = null
  if (type.startsWith('task-')) {
    const uuid = pyStr(take('uuid'))
    if (type === 'task-received' || type === 'task-sent') {
      task = `${pyStr(take('name'))}(${uuid}) args=${pyStr(take('args'))} kwargs=${pyStr(take('kwargs'))}`
      taskNames.set(uuid, task)
      // Celery's LRUCache(limit=0xFFF).
      if (taskNames.size > 0xfff) taskNames.delete(taskNames.keys().next().value as string)
    } else {
      task = taskNames.get(uuid) ?? ''
    }
  }
  const fields = Object.keys(ev)
    .sort(comparePyStr)
    .map((key) => `${key}=${pyStr(ev[key])}`)
    .join(', ')
  const sep = fields ? ':' : ''
  // One event, one line: a newline or an ESC sent in a field is shown as Python's repr writes it (Celery prints it raw).
  return escapeControl(
    task === null ? `${hostname} [${timestamp}] ${human}${sep} ${fields}` : `${hostname} [${timestamp}] ${human}${sep} ${task} ${fields}`,
  )
}
