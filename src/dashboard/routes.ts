// Every path the dashboard answers, in one table: method, path pattern,
// handler. The first row whose pattern matches a path is the path's route; a
// request with another method gets 405 and the method the route takes.
//
// A pattern is an exact path, or a prefix ending in `:name` (the rest of the
// path, not empty, decoded: a worker's or task's name) or in `*` (the rest as
// written, possibly empty).
import type { DashboardContext } from './context.js'
import type { FeaturesPresent } from './features.js'
import * as features from './features-api.js'
import * as failed from './failed-api.js'
import * as flower from './flower-api.js'
import { HttpError, send, type Call } from './http.js'
import { PAGES, serveIndex, serveStatic } from './static.js'
import * as ui from './ui-api.js'

export interface Route {
  /** GET answers HEAD too; ANY answers every method, before the method and cross-site checks. */
  method: 'GET' | 'POST' | 'ANY'
  path: string
  handler: (d: DashboardContext, c: Call) => Promise<void> | void
  /** Answered without credentials (load balancers call it; Flower's is too). */
  open?: boolean
  /** The feature page this belongs to: answered only while the page is shown. */
  page?: keyof FeaturesPresent
  /** Its refusals are JSON, as the pages that call it read them. */
  json?: boolean
}

const healthcheck = (_d: DashboardContext, c: Call): void => send(c.res, 200, 'OK', 'text/plain; charset=utf-8')

async function metrics(d: DashboardContext, c: Call): Promise<void> {
  d.cluster.refreshLoadSoon()
  // Concurrency keys are read from their store at each scrape: no event tells of a parked message.
  d.cluster.metrics.setConcurrency(await d.cluster.features.concurrency().catch(() => null))
  send(c.res, 200, await d.cluster.metrics.text(), d.cluster.metrics.contentType)
}

export const ROUTES: readonly Route[] = [
  { method: 'ANY', path: '/healthcheck', handler: healthcheck, open: true },
  { method: 'GET', path: '/metrics', handler: metrics },
  { method: 'GET', path: '/static/*', handler: serveStatic },
  ...PAGES.map((path): Route => ({ method: 'GET', path, handler: serveIndex })),

  // Flower's REST API.
  { method: 'GET', path: '/api/workers', handler: flower.listWorkers },
  { method: 'POST', path: '/api/worker/shutdown/:name', handler: flower.workerShutdown },
  { method: 'POST', path: '/api/worker/pool/grow/:name', handler: (d, c) => flower.workerPool(d, c, 'grow') },
  { method: 'POST', path: '/api/worker/pool/shrink/:name', handler: (d, c) => flower.workerPool(d, c, 'shrink') },
  { method: 'POST', path: '/api/worker/pool/autoscale/:name', handler: (d, c) => flower.workerPool(d, c, 'autoscale') },
  { method: 'POST', path: '/api/worker/pool/restart/:name', handler: (d, c) => flower.workerPool(d, c, 'restart') },
  { method: 'POST', path: '/api/worker/queue/add-consumer/:name', handler: (d, c) => flower.workerQueue(d, c, 'add-consumer') },
  { method: 'POST', path: '/api/worker/queue/cancel-consumer/:name', handler: (d, c) => flower.workerQueue(d, c, 'cancel-consumer') },
  { method: 'GET', path: '/api/tasks', handler: flower.listTasks },
  { method: 'GET', path: '/api/task/types', handler: flower.taskTypes },
  { method: 'GET', path: '/api/queues/length', handler: flower.queueLengths },
  { method: 'GET', path: '/api/task/info/:id', handler: flower.taskInfo },
  { method: 'GET', path: '/api/task/result/:id', handler: flower.taskResult },
  { method: 'POST', path: '/api/task/apply/:name', handler: (d, c) => flower.applyTask(d, c, 'apply') },
  { method: 'POST', path: '/api/task/async-apply/:name', handler: (d, c) => flower.applyTask(d, c, 'async-apply') },
  { method: 'POST', path: '/api/task/send-task/:name', handler: (d, c) => flower.applyTask(d, c, 'send-task') },
  { method: 'POST', path: '/api/task/revoke/:id', handler: flower.revoke },
  { method: 'POST', path: '/api/task/abort/:id', handler: flower.abort },
  { method: 'POST', path: '/api/task/timeout/:name', handler: flower.taskTimeout },
  { method: 'POST', path: '/api/task/rate-limit/:name', handler: flower.taskRateLimit },

  // The pages' own calls.
  { method: 'GET', path: '/api/ui/stream', handler: ui.uiStream },
  { method: 'GET', path: '/api/ui/summary', handler: ui.uiSummary },
  { method: 'GET', path: '/api/ui/workers', handler: ui.uiWorkers },
  { method: 'GET', path: '/api/ui/worker/:name', handler: ui.uiWorker },
  { method: 'GET', path: '/api/ui/tasks', handler: ui.uiTasks },
  { method: 'GET', path: '/api/ui/task/:id', handler: ui.uiTask },
  { method: 'GET', path: '/api/ui/why/:id', handler: ui.uiWhy },
  { method: 'GET', path: '/api/ui/overview', handler: ui.uiOverview },
  { method: 'POST', path: '/api/ui/control/:command', handler: ui.uiControl },
  { method: 'POST', path: '/api/ui/retry/:id', handler: ui.uiRetry },
  { method: 'GET', path: '/api/ui/failed', handler: failed.uiFailed, json: true },
  { method: 'POST', path: '/api/ui/failed/retry', handler: failed.uiFailedRetry, json: true },

  // The archive, locks and schedule pages, where shown.
  { method: 'GET', path: '/api/ui/features', handler: features.present, json: true },
  { method: 'GET', path: '/api/ui/archive', handler: features.archive, page: 'archive', json: true },
  { method: 'POST', path: '/api/ui/archive/replay/:service', handler: features.archiveReplay, page: 'archive', json: true },
  { method: 'GET', path: '/api/ui/locks', handler: features.lockList, page: 'locks', json: true },
  // Each concurrency key's backlog, running count and limit (docs/concurrency-keys.md).
  { method: 'GET', path: '/api/concurrency', handler: features.concurrencyList, json: true },
  { method: 'POST', path: '/api/ui/lock/rm/:id', handler: features.lockRemove, page: 'locks', json: true },
  { method: 'GET', path: '/api/ui/lock/:id', handler: features.lockShow, page: 'locks', json: true },
  { method: 'GET', path: '/api/ui/schedule', handler: features.scheduleList, page: 'schedule', json: true },
  {
    method: 'POST',
    path: '/api/ui/schedule/add/:entry',
    handler: (d, c) => features.scheduleWrite(d, c, 'add'),
    page: 'schedule',
    json: true,
  },
  {
    method: 'POST',
    path: '/api/ui/schedule/set/:entry',
    handler: (d, c) => features.scheduleWrite(d, c, 'set'),
    page: 'schedule',
    json: true,
  },
  {
    method: 'POST',
    path: '/api/ui/schedule/enable/:entry',
    handler: (d, c) => features.scheduleEnable(d, c, true),
    page: 'schedule',
    json: true,
  },
  {
    method: 'POST',
    path: '/api/ui/schedule/disable/:entry',
    handler: (d, c) => features.scheduleEnable(d, c, false),
    page: 'schedule',
    json: true,
  },
  { method: 'POST', path: '/api/ui/schedule/rm/:entry', handler: features.scheduleRemove, page: 'schedule', json: true },
  { method: 'GET', path: '/api/ui/schedule/:entry', handler: features.scheduleShow, page: 'schedule', json: true },
]

export interface Matched {
  route: Route
  /** The rest of the path after the pattern's prefix, as written ('' for an exact path). */
  rest: string
}

/** A table ready to match: each pattern split into its prefix and what follows it. */
export class RouteTable {
  private readonly rows: { route: Route; prefix: string; tail: 'none' | 'param' | 'rest' }[]

  constructor(routes: readonly Route[] = ROUTES) {
    this.rows = routes.map((route) => {
      const colon = route.path.lastIndexOf('/:')
      if (colon !== -1) return { route, prefix: route.path.slice(0, colon + 1), tail: 'param' as const }
      if (route.path.endsWith('*')) return { route, prefix: route.path.slice(0, -1), tail: 'rest' as const }
      return { route, prefix: route.path, tail: 'none' as const }
    })
  }

  /** The first route whose pattern matches the path, or null. */
  match(path: string): Matched | null {
    for (const { route, prefix, tail } of this.rows) {
      if (tail === 'none' ? path === prefix : path.startsWith(prefix) && (tail === 'rest' || path.length > prefix.length))
        return { route, rest: path.slice(prefix.length) }
    }
    return null
  }
}

/** Does the route take this method? HEAD is a GET without its body. */
export function takes(route: Route, method: string): boolean {
  return route.method === 'ANY' || route.method === method || (route.method === 'GET' && method === 'HEAD')
}

/** The `:name` a route took, decoded; a malformed escape in it is the client's error. */
export function paramOf(matched: Matched): string {
  if (!matched.route.path.includes('/:')) return matched.rest
  try {
    return decodeURIComponent(matched.rest)
  } catch {
    throw new HttpError(400, 'Bad request: a malformed %-escape in the path')
  }
}
