// Flower's REST API (flower/api/workers.py, tasks.py, control.py): the same
// arguments, the same JSON shapes and messages, the same refusals, so a
// script written against Flower works against this dashboard. Each handler is
// one row of the route table (routes.ts).
import { FINISHED_STATES, QuerySyntaxError, SORT_KEYS, type TaskPage, type TaskQuery, type WorkerRecord } from '../cluster-state/index.js'
import { ProtocolError } from '../protocol/index.js'
import type { Cluster } from './cluster.js'
import { scrubSecrets } from './cluster.js'
import type { DashboardContext } from './context.js'
import { boolArg, floatArg, formArgs, HttpError, intArg, readBody, sendJson, sendRefusal, type Call } from './http.js'

/** A result asked for by apply waits this long for the task to finish (Flower's apply). */
const APPLY_WAIT_MS = 24 * 3600 * 1000

export function knownWorker(cluster: Cluster, name: string): WorkerRecord {
  const worker = cluster.state.workers.get(name)
  if (!worker) throw new HttpError(404, `Unknown worker '${name}'`)
  return worker
}

/** The one node's reply, or the reason it gave (Flower's error_reason). */
function replyOf(name: string, replies: Record<string, unknown>[]): { ok?: string; error?: string } | null {
  for (const reply of replies) if (reply[name] && typeof reply[name] === 'object') return reply[name] as { ok?: string; error?: string }
  return null
}

// ---- workers ----------------------------------------------------------------

export async function listWorkers(d: DashboardContext, c: Call): Promise<void> {
  const { cluster } = d
  const refresh = boolArg(c.query.get('refresh'))
  const status = boolArg(c.query.get('status'))
  const workername = c.query.get('workername')
  if (refresh) {
    try {
      await cluster.inspect(workername ?? undefined)
    } catch (error) {
      throw new HttpError(503, `Failed to update workers: ${(error as Error).message}`)
    }
  }
  if (status) {
    const info: Record<string, boolean> = {}
    for (const [name, worker] of cluster.state.workers) info[name] = cluster.state.alive(worker)
    return sendJson(c.res, 200, info)
  }
  const inspected = (w: WorkerRecord): boolean => w.inspect.timestamp !== undefined
  if (workername) {
    const worker = cluster.state.workers.get(workername)
    if (!worker || !inspected(worker)) throw new HttpError(404, `Unknown worker '${workername}'`)
    return sendJson(c.res, 200, { [workername]: scrubSecrets(worker.inspect) })
  }
  const out: Record<string, unknown> = {}
  // Scrubbed when stored and again here: whatever put it there, no password leaves.
  for (const [name, worker] of cluster.state.workers) if (inspected(worker)) out[name] = scrubSecrets(worker.inspect)
  sendJson(c.res, 200, out)
}

export async function workerShutdown(d: DashboardContext, c: Call): Promise<void> {
  knownWorker(d.cluster, c.param)
  await d.cluster.broadcast('shutdown', {}, { destination: [c.param], reply: false })
  sendJson(c.res, 200, { message: 'Shutting down!' })
}

export type PoolAction = 'grow' | 'shrink' | 'autoscale' | 'restart'

export async function workerPool(d: DashboardContext, c: Call, action: PoolAction): Promise<void> {
  const name = c.param
  const args = await formArgs(c)
  knownWorker(d.cluster, name)
  let method: string
  let params: Record<string, unknown>
  let success: string
  let failure: string
  if (action === 'grow' || action === 'shrink') {
    const n = intArg(args.get('n'), 'n', 1)!
    method = `pool_${action}`
    params = { n }
    success = action === 'grow' ? `Growing '${name}' worker's pool by ${n}` : `Shrinking '${name}' worker's pool by ${n}`
    failure = action === 'grow' ? `Failed to grow '${name}' worker's pool` : `Failed to shrink '${name}' worker's pool`
  } else if (action === 'autoscale') {
    const min = intArg(args.get('min'), 'min', null)
    const max = intArg(args.get('max'), 'max', null)
    if (min === null || max === null) throw new HttpError(400, 'Missing argument min or max')
    method = 'autoscale'
    params = { min, max }
    success = `Autoscaling '${name}' worker (min=${min}, max=${max})`
    failure = `Failed to autoscale '${name}' worker`
  } else {
    method = 'pool_restart'
    params = { reload: false }
    success = `Restarting '${name}' worker's pool`
    failure = `Failed to restart the '${name}' pool`
  }
  const replies = await d.cluster.broadcast(method, params, { destination: [name] })
  const reply = replyOf(name, replies)
  if (reply && 'ok' in reply) return sendJson(c.res, 200, { message: success })
  sendRefusal(c.res, `${failure}: ${reply?.error ?? 'Unknown reason'}`)
}

export async function workerQueue(d: DashboardContext, c: Call, action: 'add-consumer' | 'cancel-consumer'): Promise<void> {
  const name = c.param
  const args = await formArgs(c)
  knownWorker(d.cluster, name)
  const queue = args.get('queue')
  if (!queue) throw new HttpError(400, 'Missing argument queue')
  const method = action === 'add-consumer' ? 'add_consumer' : 'cancel_consumer'
  const replies = await d.cluster.broadcast(method, { queue }, { destination: [name] })
  const reply = replyOf(name, replies)
  if (reply && 'ok' in reply) return sendJson(c.res, 200, { message: reply.ok })
  const failure =
    action === 'add-consumer'
      ? `Failed to add '${queue}' consumer to '${name}' worker`
      : `Failed to cancel '${queue}' consumer from '${name}' worker`
  sendRefusal(c.res, `${failure}: ${reply?.error ?? 'Unknown reason'}`)
}

// ---- tasks ------------------------------------------------------------------

/** Flower's received_start/_end: '%Y-%m-%d %H:%M', local time. */
function parseFlowerTime(value: string | null, name: string): number | null {
  if (!value) return null
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})$/.exec(value.trim())
  if (!m) throw new HttpError(400, `${name}: expected 'YYYY-MM-DD HH:MM', got '${value}'`)
  return new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5])).getTime() / 1000
}

function taskQuery(query: URLSearchParams): TaskQuery {
  const all = (v: string | null): string | null => (v && v !== 'All' ? v : null)
  const sortBy = query.get('sort_by')
  if (sortBy && !SORT_KEYS.has(sortBy.replace(/^-/, '')))
    throw new HttpError(400, `sort_by: unknown field '${sortBy.replace(/^-/, '')}'`, true)
  return {
    limit: intArg(query.get('limit'), 'limit', null),
    offset: intArg(query.get('offset'), 'offset', 0) ?? 0,
    sortBy,
    workername: all(query.get('workername')),
    taskname: all(query.get('taskname')),
    state: all(query.get('state')),
    receivedStart: parseFlowerTime(query.get('received_start'), 'received_start'),
    receivedEnd: parseFlowerTime(query.get('received_end'), 'received_end'),
    search: query.get('search'),
  }
}

/** Flower's search_tasks arguments (filters, search, sort, page) run on the cluster state; the UI's task list asks the same. */
export function runQuery(cluster: Cluster, query: URLSearchParams, count = true): TaskPage {
  try {
    return cluster.state.queryTasks({ ...taskQuery(query), count })
  } catch (error) {
    if (error instanceof QuerySyntaxError) throw new HttpError(400, error.message, true)
    throw error
  }
}

export function listTasks(d: DashboardContext, c: Call): void {
  // Flower's answer is the page alone: no count, so the walk ends with the page.
  const page = runQuery(d.cluster, c.query, false)
  const out: Record<string, unknown> = {}
  for (const task of page.tasks) out[task.uuid] = d.cluster.state.taskAsDict(task)
  sendJson(c.res, 200, out)
}

export function taskTypes(d: DashboardContext, c: Call): void {
  sendJson(c.res, 200, { 'task-types': [...d.cluster.state.taskTypes].sort() })
}

export async function queueLengths(d: DashboardContext, c: Call): Promise<void> {
  sendJson(c.res, 200, { active_queues: (await d.cluster.queueLengths()).map(({ name, messages }) => ({ name, messages })) })
}

export function taskInfo(d: DashboardContext, c: Call): void {
  const task = d.cluster.state.tasks.get(c.param)
  if (!task) throw new HttpError(404, `Unknown task '${c.param}'`)
  sendJson(c.res, 200, { ...d.cluster.state.taskAsDict(task), 'task-id': task.uuid })
}

function resultFields(meta: { status: string; result: unknown; traceback?: string | null }): Record<string, unknown> {
  return meta.status === 'FAILURE' ? { result: meta.result, traceback: meta.traceback ?? null } : { result: meta.result }
}

/** The backend's answer; a stored result the decoder refuses (a pickle over the limits, code in it) is a 502 saying so, not a 500. */
async function storedResult(cluster: Cluster, id: string, timeoutMs?: number): Promise<Awaited<ReturnType<Cluster['result']>>> {
  try {
    return await cluster.result(id, timeoutMs)
  } catch (error) {
    if (error instanceof ProtocolError) throw new HttpError(502, `the stored result of '${id}' is refused: ${error.message}`, true)
    throw error
  }
}

export async function taskResult(d: DashboardContext, c: Call): Promise<void> {
  const id = c.param
  if (!d.cluster.hasBackend()) throw new HttpError(503, 'No result backend configured')
  const timeout = floatArg(c.query.get('timeout'), 'timeout')
  const meta = await storedResult(d.cluster, id, timeout ? timeout * 1000 : undefined)
  const response: Record<string, unknown> = { 'task-id': id, state: meta?.status ?? 'PENDING' }
  if (meta && (timeout || FINISHED_STATES.has(meta.status))) Object.assign(response, resultFields(meta))
  sendJson(c.res, 200, response)
}

/** Names a task may be applied by: the app's, those events named, those workers registered. */
function knownTaskNames(d: DashboardContext): Set<string> {
  const names = new Set(d.appTasks)
  for (const name of d.cluster.state.taskTypes) names.add(name)
  for (const worker of d.cluster.state.workers.values()) {
    const registered = worker.inspect.registered
    if (Array.isArray(registered)) for (const r of registered) if (typeof r === 'string') names.add(r.split(' ')[0]!)
  }
  return names
}

export type ApplyKind = 'apply' | 'async-apply' | 'send-task'

export async function applyTask(d: DashboardContext, c: Call, kind: ApplyKind): Promise<void> {
  const { cluster } = d
  const name = c.param
  const body = await readBody(c.req)
  let options: Record<string, unknown>
  try {
    options = body ? (JSON.parse(body) as Record<string, unknown>) : {}
  } catch (error) {
    throw new HttpError(400, (error as Error).message)
  }
  if (!options || typeof options !== 'object' || Array.isArray(options)) throw new HttpError(400, 'invalid options')
  const { args = [], kwargs = {}, ...rest } = options
  if (!Array.isArray(args)) throw new HttpError(400, 'args must be an array')
  if (!kwargs || typeof kwargs !== 'object' || Array.isArray(kwargs)) throw new HttpError(400, 'kwargs must be an object')
  if (kind !== 'send-task' && !knownTaskNames(d).has(name)) throw new HttpError(404, `Unknown task '${name}'`)
  const send: Parameters<Cluster['sendTask']>[3] = {}
  if (typeof rest.queue === 'string') send.queue = rest.queue
  if (rest.countdown !== undefined) {
    const countdown = Number(rest.countdown)
    if (!Number.isFinite(countdown)) throw new HttpError(400, 'Invalid option')
    send.countdown = countdown
  }
  if (typeof rest.eta === 'string') send.eta = rest.eta
  if (typeof rest.expires === 'number' || typeof rest.expires === 'string') send.expires = rest.expires
  if (typeof rest.priority === 'number') send.priority = rest.priority
  if (typeof rest.task_id === 'string') send.id = rest.task_id
  const id = await cluster.sendTask(name, args, kwargs as Record<string, unknown>, send)
  const response: Record<string, unknown> = { 'task-id': id }
  if (kind === 'apply') {
    if (cluster.hasBackend()) {
      const meta = await storedResult(cluster, id, APPLY_WAIT_MS)
      Object.assign(response, meta ? resultFields(meta) : { result: null }, { state: meta?.status ?? 'PENDING' })
    }
  } else if (cluster.hasBackend()) {
    response.state = (await cluster.result(id))?.status ?? 'PENDING'
  }
  sendJson(c.res, 200, response)
}

export async function revoke(d: DashboardContext, c: Call): Promise<void> {
  const args = await formArgs(c)
  const terminate = boolArg(args.get('terminate'))
  const signal = args.get('signal') ?? 'SIGTERM'
  if (!/^(SIG)?[A-Z0-9]+$/i.test(signal)) throw new HttpError(400, `signal: not a signal name: '${signal}'`)
  await d.cluster.broadcast('revoke', { task_id: c.param, terminate, signal }, { reply: false })
  sendJson(c.res, 200, { message: `Revoked '${c.param}'` })
}

/** celery.contrib.abortable's abort: ABORTED in the result backend, which the task reads. */
export async function abort(d: DashboardContext, c: Call): Promise<void> {
  if (!d.cluster.hasBackend()) throw new HttpError(503, 'No result backend configured')
  await d.cluster.abort(c.param)
  sendJson(c.res, 200, { message: `Aborted '${c.param}'` })
}

/** The worker a task's time or rate limit is set on: named, known, and the task known too. */
function taskControlTarget(d: DashboardContext, taskname: string, args: URLSearchParams): string {
  const workername = args.get('workername')
  if (!workername) throw new HttpError(400, 'Missing argument workername')
  if (!knownTaskNames(d).has(taskname)) throw new HttpError(404, `Unknown task '${taskname}'`)
  knownWorker(d.cluster, workername)
  return workername
}

export async function taskTimeout(d: DashboardContext, c: Call): Promise<void> {
  const taskname = c.param
  const args = await formArgs(c)
  const workername = taskControlTarget(d, taskname, args)
  const hard = floatArg(args.get('hard'), 'hard')
  const soft = floatArg(args.get('soft'), 'soft')
  const replies = await d.cluster.broadcast('time_limit', { task_name: taskname, hard, soft }, { destination: [workername] })
  const reply = replyOf(workername, replies)
  if (reply && 'ok' in reply) return sendJson(c.res, 200, { message: reply.ok })
  sendRefusal(c.res, `Failed to set timeouts: '${reply?.error ?? 'Unknown reason'}'`)
}

export async function taskRateLimit(d: DashboardContext, c: Call): Promise<void> {
  const taskname = c.param
  const args = await formArgs(c)
  const workername = taskControlTarget(d, taskname, args)
  const ratelimit = args.get('ratelimit')
  if (ratelimit === null) throw new HttpError(400, 'Missing argument ratelimit')
  const replies = await d.cluster.broadcast('rate_limit', { task_name: taskname, rate_limit: ratelimit }, { destination: [workername] })
  const reply = replyOf(workername, replies)
  if (reply && 'ok' in reply) return sendJson(c.res, 200, { message: reply.ok })
  sendRefusal(c.res, `Failed to set rate limit: '${reply?.error ?? 'Unknown reason'}'`)
}
