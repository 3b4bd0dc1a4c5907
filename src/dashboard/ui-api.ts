// The pages' own calls (/api/ui/...): the views they render (views.ts), the
// control commands the worker and task pages send, and a task sent again.
// Errors the pages show are JSON (`{"error": ...}`).
import { ResendRefusedError } from '../client/index.js'
import { DEFAULT_MAX_DEPTH, jsonDepthExceeds, ProtocolError } from '../protocol/index.js'
import { scrubSecrets } from './cluster.js'
import type { DashboardContext } from './context.js'
import { knownWorker } from './flower-api.js'
import { boolArg, HttpError, readBody, sendJson, type Call } from './http.js'
import { overviewView, summary, taskDetail, tasksView, workerSummary, workersView } from './views.js'

/** Control commands the pages may send (the worker page's actions and the task page's revoke). */
const UI_COMMANDS = new Set([
  'shutdown',
  'pool_grow',
  'pool_shrink',
  'autoscale',
  'add_consumer',
  'cancel_consumer',
  'rate_limit',
  'time_limit',
  'revoke',
  'pool_restart',
  'enable_events',
  'disable_events',
])

export function uiSummary(d: DashboardContext, c: Call): void {
  sendJson(c.res, 200, summary(d.cluster))
}

export function uiWorkers(d: DashboardContext, c: Call): void {
  sendJson(c.res, 200, workersView(d.cluster))
}

export async function uiWorker(d: DashboardContext, c: Call): Promise<void> {
  const worker = knownWorker(d.cluster, c.param)
  if (boolArg(c.query.get('refresh'))) await d.cluster.inspect(c.param).catch(() => undefined)
  sendJson(c.res, 200, { summary: workerSummary(d.cluster, worker), inspect: scrubSecrets(worker.inspect), counter: worker.counter })
}

export function uiTasks(d: DashboardContext, c: Call): void {
  sendJson(c.res, 200, tasksView(d.cluster, c.query))
}

export function uiTask(d: DashboardContext, c: Call): void {
  const task = d.cluster.state.tasks.get(c.param)
  if (!task) throw new HttpError(404, `Unknown task '${c.param}'`)
  sendJson(c.res, 200, taskDetail(d.cluster, task))
}

/** `tsq why` for the task page: the answer, its evidence and the facts, from every source at hand (known task or not). */
export async function uiWhy(d: DashboardContext, c: Call): Promise<void> {
  sendJson(c.res, 200, scrubSecrets(await d.cluster.why(c.param)))
}

export function uiOverview(d: DashboardContext, c: Call): void {
  sendJson(c.res, 200, overviewView(d.cluster))
}

export function uiStream(d: DashboardContext, c: Call): void {
  d.stream.open(c.req, c.res)
}

/** A control command from a page: `{"destination": [...], "arguments": {...}}`; the replies, passwords scrubbed. */
export async function uiControl(d: DashboardContext, c: Call): Promise<void> {
  const method = c.param
  const body = await readBody(c.req)
  if (!UI_COMMANDS.has(method)) throw new HttpError(404, `Unknown command '${method}'`)
  let input: { destination?: unknown; arguments?: unknown }
  // The arguments go out in a control request, which a worker refuses past this depth.
  if (jsonDepthExceeds(body, DEFAULT_MAX_DEPTH)) throw new HttpError(400, `Body: nests deeper than ${DEFAULT_MAX_DEPTH} levels`)
  try {
    input = body ? (JSON.parse(body) as typeof input) : {}
  } catch {
    throw new HttpError(400, 'Body: expected JSON')
  }
  const destination = Array.isArray(input.destination) ? input.destination.filter((dest): dest is string => typeof dest === 'string') : null
  const args =
    input.arguments && typeof input.arguments === 'object' && !Array.isArray(input.arguments)
      ? (input.arguments as Record<string, unknown>)
      : {}
  const replies = await d.cluster.broadcast(method, args, { destination, reply: method !== 'shutdown' || destination !== null })
  // A changed pool shows at once on the worker's page.
  if (destination && method !== 'shutdown') for (const dest of destination) void d.cluster.inspect(dest).catch(() => undefined)
  sendJson(c.res, 200, { replies: scrubSecrets(replies) })
}

/** Sends the task again exactly (client/failed-tasks.ts: its kept message, or result_extended's exact arguments); refused with the reason otherwise. */
export async function uiRetry(d: DashboardContext, c: Call): Promise<void> {
  try {
    const r = await d.cluster.resend(c.param)
    // A kept message runs again under its own id; a re-send of result_extended's arguments is a new task.
    sendJson(c.res, 200, { 'task-id': r.taskId, how: r.how })
  } catch (error) {
    if (error instanceof ResendRefusedError) throw new HttpError(409, error.message, true)
    if (error instanceof ProtocolError) throw new HttpError(502, `the stored result of '${c.param}' is refused: ${error.message}`, true)
    throw error
  }
}
