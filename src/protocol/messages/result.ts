// Task results (spec §2): states, the key-value backend meta document, the
// rpc backend's short form, and exception encoding for the json serializer.

import { dumps, isoformatUtc, loads } from '../codecs/kombu-json.js'
import { MalformedMessageError } from '../errors.js'
import { checkJsonText } from '../codecs/limits.js'
import { pyRepr, pyStr } from '../codecs/python-repr.js'
import { formatPyFloat } from '../codecs/py-types.js'

export const States = {
  PENDING: 'PENDING',
  RECEIVED: 'RECEIVED',
  STARTED: 'STARTED',
  SUCCESS: 'SUCCESS',
  FAILURE: 'FAILURE',
  REVOKED: 'REVOKED',
  REJECTED: 'REJECTED',
  RETRY: 'RETRY',
  IGNORED: 'IGNORED',
} as const

export type TaskState = keyof typeof States
/** A built-in state, or one a task stores with updateState() (PROGRESS, say), as Celery allows. */
export type StateName = TaskState | (string & {})

export const READY_STATES: ReadonlySet<string> = new Set([States.SUCCESS, States.FAILURE, States.REVOKED])
export const UNREADY_STATES: ReadonlySet<string> = new Set([States.PENDING, States.RECEIVED, States.STARTED, States.REJECTED, States.RETRY])
export const EXCEPTION_STATES: ReadonlySet<string> = new Set([States.RETRY, States.FAILURE, States.REVOKED])
export const PROPAGATE_STATES: ReadonlySet<string> = new Set([States.FAILURE, States.REVOKED])

// celery.states.PRECEDENCE, highest first; an unknown state sits between FAILURE and REVOKED.
const PRECEDENCE: readonly (string | null)[] = [
  'SUCCESS',
  'FAILURE',
  null,
  'REVOKED',
  'STARTED',
  'RECEIVED',
  'REJECTED',
  'RETRY',
  'PENDING',
]

/** celery.states.precedence: lower is more final. */
export function statePrecedence(state: string): number {
  const i = PRECEDENCE.indexOf(state)
  return i >= 0 ? i : PRECEDENCE.indexOf(null)
}

export interface ExceptionInfo {
  exc_type: string
  exc_message: unknown[]
  exc_module: string
  /**
   * tsq's: the name a JavaScript client gives the error where it differs from
   * exc_type (a JS `Error` is stored as Python's `Exception`). Celery's
   * exception_to_python reads the three keys above by name and ignores it.
   */
  exc_js_name?: string
}

/** The json-serializer form of an exception: `{"exc_type", "exc_message", "exc_module"}`, and `exc_js_name` when there is one. */
export function encodeException(type: string, args: unknown[], module = 'builtins', jsName?: string): ExceptionInfo {
  return { exc_type: type, exc_message: args, exc_module: module, ...(jsName && jsName !== type ? { exc_js_name: jsName } : {}) }
}

/** The error's name as a JavaScript client shows it: exc_js_name where the task stored one, else exc_type. */
export function jsErrorName(info: ExceptionInfo): string {
  return typeof info.exc_js_name === 'string' && info.exc_js_name ? info.exc_js_name : info.exc_type
}

export function isExceptionInfo(v: unknown): v is ExceptionInfo {
  return v !== null && typeof v === 'object' && typeof (v as { exc_type?: unknown }).exc_type === 'string'
}

function excArgs(info: ExceptionInfo): unknown[] {
  const m: unknown = info.exc_message
  // Older peers stored a bare string message rather than the args list.
  return Array.isArray(m) ? m : m === undefined || m === null || m === '' ? [] : [m]
}

/** Python's repr of the exception: `ValueError('boom', 42)`, `KeyError('x')`. */
export function exceptionRepr(info: ExceptionInfo): string {
  return `${info.exc_type}(${excArgs(info).map(pyRepr).join(', ')})`
}

/** The last line of a Python traceback: `ValueError: boom`, `ValueError: ('boom', 42)`. */
export function exceptionText(info: ExceptionInfo): string {
  const args = excArgs(info)
  // str(exc): nothing for no args, str(arg) for one, repr(args tuple) for more.
  const message = args.length === 0 ? '' : args.length === 1 ? pyStr(args[0]) : `(${args.map(pyRepr).join(', ')})`
  return message === '' ? info.exc_type : `${info.exc_type}: ${message}`
}

/** Extra meta fields written with `result_extended=True`, after the standard ones. */
export interface ExtendedResultFields {
  name: string | null
  args: unknown
  kwargs: unknown
  worker: string | null
  retries: number | null
  queue: string | null
}

export interface ResultMetaInput {
  taskId: string
  status: StateName
  result: unknown
  traceback?: string | null
  children?: unknown[]
  /** When the task became ready; defaults to now for ready states, always null otherwise. */
  dateDone?: Date | null
  groupId?: string | null
  parentId?: string | null
  extended?: ExtendedResultFields
}

/** The key-value backend document (spec §2.2), key order exactly as Celery writes it. */
export function encodeResultMeta(m: ResultMetaInput): string {
  return dumps(resultMetaValue(m))
}

/** The same document as a value, for result_serializer msgpack or yaml. */
export function resultMetaValue(m: ResultMetaInput): Record<string, unknown> {
  const ready = READY_STATES.has(m.status)
  const done = ready ? (m.dateDone ?? new Date()) : null
  const meta: Record<string, unknown> = {
    status: m.status,
    result: m.result,
    traceback: m.traceback ?? null,
    children: m.children ?? [],
    // utcnow().isoformat(): naive, so no offset at all.
    date_done: done ? isoformatUtc(done, '') : null,
  }
  if (m.groupId) meta.group_id = m.groupId
  if (m.parentId) meta.parent_id = m.parentId
  if (m.extended) Object.assign(meta, m.extended)
  meta.task_id = m.taskId
  return meta
}

export interface RpcResultInput {
  taskId: string
  status: StateName
  result: unknown
  traceback?: string | null
  children?: unknown[]
}

/** The rpc:// backend body in 5.2 (spec §2.4): no date_done. */
export function encodeRpcResult(m: RpcResultInput): string {
  return dumps(rpcResultValue(m))
}

export function rpcResultValue(m: RpcResultInput): Record<string, unknown> {
  return {
    task_id: m.taskId,
    status: m.status,
    result: m.result,
    traceback: m.traceback ?? null,
    children: m.children ?? [],
  }
}

export interface ResultMeta {
  status: string
  result: unknown
  traceback: string | null
  children: unknown[]
  date_done: string | null
  task_id: string
  [k: string]: unknown
}

/** Text a plain JSON read may change: a long digit run (an int past 2^53) or a float with an integral value (2.0, 1e+20). */
const MAY_ROUND = /\d{16}|\d\.0(?![0-9])|\d[eE]/

/** Read either the kv meta or the rpc short form; missing optional fields become null/[]. */
export function decodeResultMeta(text: string): ResultMeta {
  checkJsonText(text, 'result')
  let v: unknown
  try {
    // A Python int past 2**53 (2**64 + 1) reads back exact, as a BigInt.
    v = loads(text, { integers: 'exact' })
  } catch (cause) {
    throw new MalformedMessageError(`result is not valid JSON: ${(cause as Error).message}`, { cause })
  }
  // result_extended's args and kwargs are the call as sent: read again keeping
  // every int (BigInt beyond 2^53) and float (2.0) as it was, so a re-send is exact.
  if (v && typeof v === 'object' && ('args' in v || 'kwargs' in v) && MAY_ROUND.test(text)) {
    const exact = loads(text, { integers: 'exact', floats: 'pyfloat' }) as Record<string, unknown>
    Object.assign(v, { args: exact.args, kwargs: exact.kwargs })
  }
  return resultMetaFrom(v)
}

/** A decoded meta (from any serializer) checked and filled in as decodeResultMeta does. */
export function resultMetaFrom(v: unknown): ResultMeta {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new MalformedMessageError('result meta must be a mapping')
  const o = v as Record<string, unknown>
  if (typeof o.status !== 'string') throw new MalformedMessageError('result meta has no status')
  if (o.task_id !== undefined && typeof o.task_id !== 'string') throw new MalformedMessageError('result meta task_id must be a string')
  return {
    ...o,
    status: o.status,
    result: o.result ?? null,
    traceback: typeof o.traceback === 'string' ? o.traceback : null,
    children: Array.isArray(o.children) ? o.children : [],
    date_done: typeof o.date_done === 'string' ? o.date_done : null,
    task_id: typeof o.task_id === 'string' ? o.task_id : '',
  }
}

/**
 * One line for the CLI: an exception result as `ValueError: boom` (what a
 * Python traceback ends with), anything else as Python's str() of the value,
 * which is what `celery result` echoes.
 */
export function describeResult(meta: Pick<ResultMeta, 'status' | 'result'>): string {
  if (EXCEPTION_STATES.has(meta.status) && isExceptionInfo(meta.result)) return exceptionText(meta.result)
  return pyStr(meta.result)
}

// ---- chords (spec §2.3) ----------------------------------------------------

/**
 * One finished header task as the Redis backend keeps it in the chord's `.j`
 * sorted set: `[1, task_id, state, result]`, an exception result in its json
 * form. The leading 1 is a format version Celery writes and never reads.
 */
export function encodeChordPart(taskId: string, state: TaskState, result: unknown): string {
  return dumps([1, taskId, state, result])
}

/** What the chord body gets: every header result in group order, or why it fails. */
export type ChordJoin = { ok: true; values: unknown[] } | { ok: false; error: string }

/**
 * Celery's `_unpack_chord_result` over the parts in group order: the first
 * part that failed or was revoked fails the chord with ChordError's message
 * `Dependency <id> raised <repr>`; an unreadable part is a join error, as
 * Celery's catch-all makes it.
 */
export function joinChordParts(parts: readonly string[]): ChordJoin {
  const values: unknown[] = []
  for (const text of parts) {
    let part: unknown
    try {
      part = loads(text)
    } catch (cause) {
      return { ok: false, error: `Join error: ValueError(${pyRepr(`unreadable chord part: ${(cause as Error).message}`)})` }
    }
    if (!Array.isArray(part) || part.length < 4 || typeof part[1] !== 'string' || typeof part[2] !== 'string') {
      return { ok: false, error: `Join error: ValueError(${pyRepr(`malformed chord part: ${text.slice(0, 200)}`)})` }
    }
    const [, taskId, state, result] = part as [unknown, string, string, unknown]
    if (PROPAGATE_STATES.has(state)) {
      const raised = isExceptionInfo(result) ? exceptionRepr(result) : pyRepr(result)
      return { ok: false, error: `Dependency ${taskId} raised ${raised}` }
    }
    values.push(result)
  }
  return { ok: true, values }
}

// ---- a chord header saved whole (Celery's GroupResult.save) -----------------

/**
 * A result as Celery's `result_from_tuple` reads it: one task's id, or a
 * group's id with its members. A chord whose header holds a group (a chain
 * ending in one) is saved this way under `celery-taskset-meta-<group id>`,
 * so the body gets that member's results as a nested list.
 */
export interface ResultNode {
  id: string
  parent: ResultNode | null
  /** A group's members; null for one task. */
  children: ResultNode[] | null
}

/** Deeper than any canvas a client builds; a saved header nested past it is refused. */
const MAX_RESULT_NESTING = 100

/** Celery's `as_tuple()`: `[[id, parent], null]` for a task, `[[id, parent], [member, ...]]` for a group. */
export function resultTuple(node: ResultNode): unknown[] {
  return [[node.id, node.parent ? resultTuple(node.parent) : null], node.children ? node.children.map(resultTuple) : null]
}

/** Celery's `result_from_tuple`; MalformedMessageError for a value that is not one. */
export function resultFromTuple(value: unknown, depth = 0): ResultNode {
  if (depth > MAX_RESULT_NESTING) throw new MalformedMessageError(`saved result nests deeper than ${MAX_RESULT_NESTING}`)
  if (!Array.isArray(value) || value.length !== 2) throw new MalformedMessageError('saved result is not a [[id, parent], members] pair')
  const [res, nodes] = value as [unknown, unknown]
  // `id, parent = res if isinstance(res, (list, tuple)) else (res, None)`
  const [id, parent] = Array.isArray(res) ? (res as [unknown, unknown]) : [res, null]
  if (typeof id !== 'string') throw new MalformedMessageError('saved result id is not a string')
  if (nodes !== null && nodes !== undefined && !Array.isArray(nodes)) throw new MalformedMessageError('saved group members are not a list')
  return {
    id,
    parent: parent ? resultFromTuple(parent, depth + 1) : null,
    children: Array.isArray(nodes) ? nodes.map((child) => resultFromTuple(child, depth + 1)) : null,
  }
}

/** Every task id whose result a join of `node` reads, depth first. */
export function resultTreeTaskIds(node: ResultNode): string[] {
  return node.children ? node.children.flatMap(resultTreeTaskIds) : [node.id]
}

/** What a result backend holds for a task, as far as a join reads it. */
type JoinedMeta = Pick<ResultMeta, 'status' | 'result'>

class JoinFailure {
  constructor(readonly error: string) {}
}

/**
 * Celery's GroupResult.join_native over a chord header saved whole, as the
 * Redis backend's on_chord_part_return joins it: each member's result in
 * header order, a group member's as the list of its own. Groups are read
 * before tasks (Celery's iter_native), so the error is the first failure in
 * that order, raised through the join: `Join error: <repr>`, or a ChordError's
 * own message. A result not there (`metaOf` gives nothing ready) is the join's
 * timeout.
 */
export function joinResultTree(
  header: ResultNode,
  metaOf: (taskId: string) => JoinedMeta | null | undefined,
  timeoutSeconds = 3,
): ChordJoin {
  const read: Reader = { metaOf, timeout: formatPyFloat(timeoutSeconds) }
  try {
    return { ok: true, values: joinMembers(header.children ?? [header], read) }
  } catch (error) {
    if (error instanceof JoinFailure) return { ok: false, error: error.error }
    throw error
  }
}

// GroupResult.join_native: its groups first (each member's get() in turn), then its tasks.
function joinMembers(members: readonly ResultNode[], read: Reader): unknown[] {
  const values = new Array<unknown>(members.length)
  members.forEach((member, index) => {
    if (member.children) values[index] = member.children.map((child) => getResult(child, read))
  })
  members.forEach((member, index) => {
    if (!member.children) values[index] = getResult(member, read)
  })
  return values
}

interface Reader {
  metaOf: (taskId: string) => JoinedMeta | null | undefined
  /** result_chord_join_timeout as Python prints it. */
  timeout: string
}

// AsyncResult.get() / GroupResult.get() with propagate=True.
function getResult(node: ResultNode, read: Reader): unknown {
  if (node.children) return joinMembers(node.children, read)
  const meta = read.metaOf(node.id)
  // As Celery's get_many words its timeout.
  if (!meta || !READY_STATES.has(meta.status)) throw new JoinFailure(`Join error: TimeoutError('Operation timed out (${read.timeout})')`)
  if (PROPAGATE_STATES.has(meta.status)) throw new JoinFailure(joinError(meta.result))
  return meta.result
}

/** A ChordError raised through the join keeps its message (Celery's `except ChordError`); any other is a join error. */
function joinError(result: unknown): string {
  if (!isExceptionInfo(result)) return `Join error: ${pyRepr(result)}`
  const args = excArgs(result)
  if (result.exc_type === 'ChordError' && typeof args[0] === 'string') return args[0]
  return `Join error: ${exceptionRepr(result)}`
}
