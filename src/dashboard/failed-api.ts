// The failed-task page's calls (`tsq failed` on the dashboard): the inbox,
// filtered as `tsq failed ls` filters it, and retries, one task or a
// selection, each sent again as `tsq failed retry` sends it (the kept
// message as it was, or result_extended's exact arguments, or refused with
// the reason). The page asks before a retry of more than one.
import { ResendRefusedError, type Replayed } from '../client/index.js'
import { ProtocolError } from '../protocol/index.js'
import type { DashboardContext } from './context.js'
import { HttpError, readBody, sendJson, type Call } from './http.js'

function when(text: string | null, name: string): Date | undefined {
  if (!text) return undefined
  const age = /^(\d+(?:\.\d+)?)(s|m|h|d)$/.exec(text)
  if (age) return new Date(Date.now() - Number(age[1]) * { s: 1e3, m: 6e4, h: 3.6e6, d: 8.64e7 }[age[2] as 's' | 'm' | 'h' | 'd'])
  const at = Date.parse(text)
  if (Number.isNaN(at)) throw new HttpError(400, `${name}: not an ISO 8601 time nor an age such as 30m, 2h, 1d`, true)
  return new Date(at)
}

/** GET /api/ui/failed?task=&exception=&worker=&since=&until=&limit= */
export async function uiFailed(d: DashboardContext, c: Call): Promise<void> {
  const q = c.query
  const limit = Number(q.get('limit') ?? 500)
  const tasks = await d.cluster.failedTasks(
    {
      task: q.get('task') || undefined,
      exception: q.get('exception') || undefined,
      worker: q.get('worker') || undefined,
      since: when(q.get('since'), 'since'),
      until: when(q.get('until'), 'until'),
    },
    Number.isInteger(limit) && limit > 0 ? Math.min(limit, 10_000) : 500,
  )
  sendJson(c.res, 200, { backend: d.cluster.hasBackend(), tasks })
}

/** POST /api/ui/failed/retry with `{"ids": [...]}`: each sent again, or refused with its reason. */
export async function uiFailedRetry(d: DashboardContext, c: Call): Promise<void> {
  let ids: string[]
  try {
    const body = JSON.parse((await readBody(c.req)) || '{}') as { ids?: unknown }
    ids = Array.isArray(body.ids) ? body.ids.filter((id): id is string => typeof id === 'string') : []
  } catch {
    throw new HttpError(400, 'the body must be JSON: {"ids": [...]}', true)
  }
  if (ids.length === 0) throw new HttpError(400, 'no task ids to retry', true)
  const retried: Replayed[] = []
  const refused: { taskId: string; reason: string }[] = []
  for (const id of ids) {
    try {
      retried.push(await d.cluster.resend(id))
    } catch (error) {
      if (!(error instanceof ResendRefusedError || error instanceof ProtocolError)) throw error
      refused.push({ taskId: id, reason: error.message })
    }
  }
  sendJson(c.res, 200, { retried, refused })
}
