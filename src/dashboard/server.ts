// The dashboard's HTTP side: Flower's REST API (same paths, parameters and
// JSON shapes), /metrics, /healthcheck, the pages' own JSON and their live
// stream (server-sent events), and the static front-end from web/.
//
// node:http rather than a framework: about thirty fixed routes, one auth rule
// and one cross-site rule are all a router would do here, and the process
// stays one dependency lighter for a long-running monitor.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { timingSafeEqual } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { extname, join, normalize } from 'node:path'
import { hostname as machineName, networkInterfaces } from 'node:os'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { dumps, DEFAULT_MAX_DEPTH, ProtocolError, jsonDepthExceeds } from '../protocol/index.js'
import type { EntryFlags } from '../beat/index.js'
import type { Cluster } from './cluster.js'
import { scrubSecrets } from './cluster.js'
import { FeatureError } from './features.js'
import { ResendRefusedError } from '../client/index.js'
import { FINISHED_STATES, QuerySyntaxError, SORT_KEYS, type TaskRecord, type WorkerRecord } from '../cluster-state/index.js'

/**
 * The front-end's files. The same relative step works from src/dashboard
 * (tests through tsx), dist/dashboard and dist/bundle (the bundled CLI).
 */
export const WEB_ROOT = fileURLToPath(new URL('../dashboard/web/', import.meta.url))

export interface ServerOptions {
  cluster: Cluster
  port: number
  address: string
  /** e.g. `/flower`: every path lives under it (Flower's --url-prefix). */
  urlPrefix?: string
  /** user:pass pairs (Flower's --basic-auth). */
  basicAuth?: { user: string; pass: string }[]
  /** Names tasks may be applied by (the -A app's), besides those workers registered. */
  appTasks?: string[]
  /** Host names requests may name besides the bound address and localhost (--allowed-hosts); `*` turns the check off. */
  allowedHosts?: string[]
  log?: (line: string) => void
}

class HttpError extends Error {
  constructor(readonly status: number, message: string, readonly json = false) {
    super(message)
  }
}

const MIME: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.png': 'image/png', '.svg': 'image/svg+xml' }
const VENDOR: Record<string, string> = { 'vendor/uPlot.js': 'uplot/dist/uPlot.iife.min.js', 'vendor/uPlot.css': 'uplot/dist/uPlot.min.css' }
const MAX_BODY = 1 << 20
/** Control commands the pages may send (the worker page's actions and the task page's revoke). */
const UI_COMMANDS = new Set(['shutdown', 'pool_grow', 'pool_shrink', 'autoscale', 'add_consumer', 'cancel_consumer', 'rate_limit', 'time_limit', 'revoke', 'pool_restart', 'enable_events', 'disable_events'])
const SSE_FLUSH_MS = 250
/** Why a feature's page is hidden, as its refused calls say. */
const HIDDEN_PAGE = {
  archive: 'the archive page is not shown: no tsq service has recorded itself on this broker',
  locks: 'the locks page is not shown: there is no lock store (set --lock-url)',
  schedule: 'the schedule page is not shown: no schedule store (--schedule FILE of an existing file, or --scheduler redis)',
} as const
const LOOPBACK = ['localhost', '127.0.0.1', '::1']
const SSE_MAX_TASKS = 200

interface StreamClient {
  res: ServerResponse
  /** The socket's buffer is full: this client gets a resync instead of more data. */
  stalled: boolean
}

/** A Host header's or an origin's name: lower case, without port, brackets or a trailing dot. */
export function hostName(host: string): string {
  const h = host.trim().toLowerCase()
  const bracket = /^\[([^\]]*)\](:\d*)?$/.exec(h)
  // Two colons or more without brackets: a bare IPv6 address (an interface's or --address), no port.
  const name = bracket ? bracket[1]! : h.indexOf(':') !== h.lastIndexOf(':') ? h : h.replace(/:\d*$/, '')
  return name.replace(/\.$/, '')
}

/**
 * The names a request's Host may give (against DNS rebinding: a page on
 * another name that resolves here must not be answered): the bound address,
 * localhost and the loopback addresses when bound to one, every address and
 * the name of this machine when bound to all, and those given.
 */
export function allowedHostNames(address: string, extra: readonly string[] = []): Set<string> | null {
  const names = new Set<string>(['localhost'])
  for (const e of extra) {
    if (e.trim() === '*') return null
    if (e.trim()) names.add(hostName(e))
  }
  const bound = hostName(address)
  names.add(bound)
  if (bound === '127.0.0.1' || bound === '::1' || bound === 'localhost' || bound.startsWith('127.')) for (const n of LOOPBACK) names.add(n)
  if (bound === '0.0.0.0' || bound === '::' || bound === '') {
    for (const n of LOOPBACK) names.add(n)
    names.add(machineName().toLowerCase())
    for (const list of Object.values(networkInterfaces())) for (const i of list ?? []) names.add(hostName(i.address))
  }
  return names
}

/** What an error page echoes, safe in HTML. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

export function parseBasicAuth(spec: string, source = '--basic-auth'): { user: string; pass: string }[] {
  return spec.split(',').map((pair, i) => {
    const colon = pair.indexOf(':')
    // The entry is not echoed: it may be a password typed without its user.
    if (colon <= 0) throw Object.assign(new Error(`${source}: expected user:password[,user:password], entry ${i + 1} has no 'user:'`), { code: 'USAGE' })
    return { user: pair.slice(0, colon), pass: pair.slice(colon + 1) }
  })
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/** tornado's bool argument: anything but a false word is true. */
function boolArg(value: string | null): boolean {
  if (value === null) return false
  return !['', '0', 'false', 'no', 'off'].includes(value.toLowerCase())
}

/** Flower's received_start/_end: '%Y-%m-%d %H:%M', local time. */
function parseFlowerTime(value: string | null, name: string): number | null {
  if (!value) return null
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})$/.exec(value.trim())
  if (!m) throw new HttpError(400, `${name}: expected 'YYYY-MM-DD HH:MM', got '${value}'`)
  return new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5])).getTime() / 1000
}

function intArg(value: string | null, name: string, fallback: number | null): number | null {
  if (value === null || value === '') return fallback
  if (!/^-?\d+$/.test(value)) throw new HttpError(400, `${name}: expected an integer, got '${value}'`)
  return Number(value)
}

function floatArg(value: string | null, name: string): number | null {
  if (value === null || value === '') return null
  const n = Number(value)
  if (!Number.isFinite(n)) throw new HttpError(400, `${name}: expected a number, got '${value}'`)
  return n
}

export class DashboardServer {
  private server: Server | undefined
  private readonly prefix: string
  private readonly clients = new Set<StreamClient>()
  private readonly changedTasks = new Set<string>()
  private readonly changedWorkers = new Set<string>()
  private flushTimer: NodeJS.Timeout | undefined
  private indexHtml: string | undefined
  /** null: any Host (--allowed-hosts '*'). */
  private readonly allowedHosts: Set<string> | null

  constructor(private readonly o: ServerOptions) {
    this.allowedHosts = allowedHostNames(o.address, o.allowedHosts)
    this.prefix = (o.urlPrefix ?? '').replace(/^\/*/, '/').replace(/\/+$/, '')
    if (this.prefix === '/') this.prefix = ''
    o.cluster.state.onChange((change) => {
      // Changes are kept only for a page that listens: with none, they would
      // pile up one uuid per task for as long as it runs (a new page starts
      // from its own load, not from these).
      if (this.clients.size === 0) return
      if (change.kind === 'task') this.changedTasks.add(change.task.uuid)
      else if (change.kind === 'worker') this.changedWorkers.add(change.worker.hostname)
      if (this.clients.size) this.flushTimer ??= setTimeout(() => this.flush(), SSE_FLUSH_MS)
    })
  }

  get cluster(): Cluster {
    return this.o.cluster
  }

  listen(): Promise<{ port: number; url: string }> {
    const server = createServer((req, res) => void this.handle(req, res))
    this.server = server
    server.keepAliveTimeout = 5000
    return new Promise((resolve, reject) => {
      server.once('error', (error: NodeJS.ErrnoException) => {
        reject(Object.assign(new Error(`cannot listen on ${this.o.address}:${this.o.port}: ${error.code === 'EADDRINUSE' ? 'address already in use' : error.message}`), { code: 'USAGE' }))
      })
      server.listen(this.o.port, this.o.address, () => {
        const address = server.address()
        const port = typeof address === 'object' && address ? address.port : this.o.port
        const host = this.o.address.includes(':') ? `[${this.o.address}]` : this.o.address
        resolve({ port, url: `http://${host}:${port}${this.prefix}/` })
      })
    })
  }

  async close(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer)
    for (const client of this.clients) client.res.end()
    this.clients.clear()
    await new Promise<void>((resolve) => {
      if (!this.server) return resolve()
      this.server.close(() => resolve())
      this.server.closeAllConnections()
    })
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.setHeader('X-Content-Type-Options', 'nosniff')
    res.setHeader('X-Frame-Options', 'DENY')
    res.setHeader('Referrer-Policy', 'same-origin')
    try {
      const url = new URL(req.url ?? '/', 'http://dashboard.invalid')
      let path = url.pathname
      if (this.prefix) {
        if (path !== this.prefix && !path.startsWith(`${this.prefix}/`)) throw new HttpError(404, 'Not found')
        path = path.slice(this.prefix.length) || '/'
      }
      this.checkHost(req)
      // The health check answers without credentials, as load balancers call it (Flower's does too).
      if (path === '/healthcheck') return this.send(res, 200, 'OK', 'text/plain; charset=utf-8')
      if (!this.authorized(req)) {
        res.setHeader('WWW-Authenticate', 'Basic realm="tsq dashboard"')
        throw new HttpError(401, 'Unauthorized')
      }
      const method = req.method ?? 'GET'
      if (method === 'POST') this.checkSameOrigin(req)
      else if (method !== 'GET' && method !== 'HEAD') throw new HttpError(405, 'Method not allowed')
      await this.route(method, path, url.searchParams, req, res)
    } catch (error) {
      if (res.headersSent) {
        res.end()
        return
      }
      if (error instanceof HttpError) {
        if (error.json) return this.json(res, error.status, { error: error.message })
        return this.send(res, error.status, `${error.message}\n`, 'text/plain; charset=utf-8')
      }
      this.o.log?.(`request failed: ${(error as Error).message}`)
      this.send(res, 500, 'Internal error\n', 'text/plain; charset=utf-8')
    }
  }

  private authorized(req: IncomingMessage): boolean {
    const accounts = this.o.basicAuth
    if (!accounts || accounts.length === 0) return true
    const header = req.headers.authorization ?? ''
    const m = /^Basic\s+(\S+)$/i.exec(header)
    if (!m) return false
    const decoded = Buffer.from(m[1]!, 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    if (colon < 0) return false
    const user = decoded.slice(0, colon)
    const pass = decoded.slice(colon + 1)
    let ok = false
    for (const account of accounts) if (safeEqual(account.user, user) && safeEqual(account.pass, pass)) ok = true
    return ok
  }

  /** 421 Misdirected Request for a Host this dashboard does not answer to. A request without Host (HTTP/1.0) has no name to rebind. */
  private checkHost(req: IncomingMessage): void {
    const host = req.headers.host
    if (this.allowedHosts === null || host === undefined) return
    if (!this.allowedHosts.has(hostName(host))) {
      const shown = host.replace(/[^\x20-\x7e]/g, '?').slice(0, 200)
      throw new HttpError(421, `Misdirected Request: this dashboard does not answer to host '${shown}' (allow it with --allowed-hosts)`)
    }
  }

  /**
   * A state-changing request must come from this dashboard's own pages or
   * from a non-browser client: a browser names the page that sent it
   * (Origin, Sec-Fetch-Site), and another site's page is refused.
   */
  private checkSameOrigin(req: IncomingMessage): void {
    const site = req.headers['sec-fetch-site']
    if (site === 'cross-site' || site === 'same-site') throw new HttpError(403, 'Cross-site request refused')
    const origin = req.headers.origin
    if (origin !== undefined) {
      let host: string
      try {
        host = new URL(origin).host
      } catch {
        throw new HttpError(403, 'Cross-site request refused')
      }
      // The page's own origin: the Host it was served under, and a name on the allow-list (not just equal to a rebound Host).
      if (host !== req.headers.host || (this.allowedHosts !== null && !this.allowedHosts.has(hostName(host)))) throw new HttpError(403, 'Cross-site request refused')
    }
  }

  private send(res: ServerResponse, status: number, body: string | Buffer, type: string): void {
    res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' })
    res.end(body)
  }

  private json(res: ServerResponse, status: number, value: unknown): void {
    let text: string
    try {
      text = JSON.stringify(value)
    } catch (error) {
      // A stored result's int past 2**53 is a BigInt: written digit for digit by kombu's JSON, as Flower's json writes it.
      if (!(error instanceof TypeError && /BigInt/.test(error.message))) throw error
      text = dumps(value)
    }
    this.send(res, status, text, 'application/json; charset=UTF-8')
  }

  private async readBody(req: IncomingMessage): Promise<string> {
    let size = 0
    const chunks: Buffer[] = []
    for await (const chunk of req) {
      size += (chunk as Buffer).length
      if (size > MAX_BODY) {
        // The rest of the body is not read: this connection ends with the answer.
        const socket = req.socket
        socket.once('finish', () => socket.destroy())
        throw new HttpError(413, 'Request body too large')
      }
      chunks.push(chunk as Buffer)
    }
    return Buffer.concat(chunks).toString('utf8')
  }

  /** Query and form arguments together, as tornado's get_argument reads them. */
  private async formArgs(req: IncomingMessage, query: URLSearchParams): Promise<URLSearchParams> {
    const args = new URLSearchParams(query)
    if (req.method === 'POST' && (req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
      for (const [k, v] of new URLSearchParams(await this.readBody(req))) args.append(k, v)
    }
    return args
  }

  private async route(method: string, path: string, query: URLSearchParams, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const get = method === 'GET' || method === 'HEAD'
    const post = method === 'POST'
    const tail = (prefix: string): string | null => (path.startsWith(prefix) && path.length > prefix.length ? decodeURIComponent(path.slice(prefix.length)) : null)
    const needPost = (): void => {
      if (!post) throw new HttpError(405, 'Method not allowed: use POST')
    }
    if (path === '/metrics' && get) return this.send(res, 200, await this.cluster.metrics.text(), this.cluster.metrics.contentType)
    if (path.startsWith('/static/') && get) return this.serveStatic(path.slice('/static/'.length), res)
    if (get && (path === '/' || path === '/workers' || path === '/tasks' || path === '/queues' || path === '/broker' || path === '/overview' || path === '/archive' || path === '/locks' || path === '/schedule' || path.startsWith('/worker/') || path.startsWith('/task/'))) return this.serveIndex(res)
    // Flower's REST API.
    if (path === '/api/workers') return get ? this.listWorkers(query, res) : needPost()
    let name: string | null
    if ((name = tail('/api/worker/shutdown/'))) return (needPost(), this.workerShutdown(name, res))
    for (const action of ['grow', 'shrink', 'autoscale', 'restart']) {
      if ((name = tail(`/api/worker/pool/${action}/`))) {
        needPost()
        return this.workerPool(action, name, await this.formArgs(req, query), res)
      }
    }
    for (const action of ['add-consumer', 'cancel-consumer']) {
      if ((name = tail(`/api/worker/queue/${action}/`))) {
        needPost()
        return this.workerQueue(action, name, await this.formArgs(req, query), res)
      }
    }
    if (path === '/api/tasks') return get ? this.listTasks(query, res) : needPost()
    if (path === '/api/task/types') return this.json(res, 200, { 'task-types': [...this.cluster.state.taskTypes].sort() })
    if (path === '/api/queues/length') return this.json(res, 200, { active_queues: (await this.cluster.queueLengths()).map(({ name: n, messages }) => ({ name: n, messages })) })
    if (path.startsWith('/api/task/info/')) return this.taskInfo(decodeURIComponent(path.slice('/api/task/info/'.length)), res)
    if ((name = tail('/api/task/result/'))) return this.taskResult(name, query, res)
    for (const kind of ['apply', 'async-apply', 'send-task']) {
      if ((name = tail(`/api/task/${kind}/`))) {
        needPost()
        return this.applyTask(kind, name, await this.readBody(req), res)
      }
    }
    if ((name = tail('/api/task/revoke/'))) {
      needPost()
      return this.revoke(name, await this.formArgs(req, query), res)
    }
    if ((name = tail('/api/task/abort/'))) {
      needPost()
      if (!this.cluster.hasBackend()) throw new HttpError(503, 'No result backend configured')
      await this.cluster.abort(name)
      return this.json(res, 200, { message: `Aborted '${name}'` })
    }
    if ((name = tail('/api/task/timeout/'))) {
      needPost()
      return this.taskTimeout(name, await this.formArgs(req, query), res)
    }
    if ((name = tail('/api/task/rate-limit/'))) {
      needPost()
      return this.taskRateLimit(name, await this.formArgs(req, query), res)
    }
    // The pages' own calls.
    if (path === '/api/ui/stream' && get) return this.stream(req, res)
    if (path === '/api/ui/summary' && get) return this.json(res, 200, this.summary())
    if (path === '/api/ui/workers' && get) return this.json(res, 200, { workers: [...this.cluster.state.workers.values()].map((w) => this.workerSummary(w)) })
    if ((name = tail('/api/ui/worker/')) && get) return this.workerDetail(name, query, res)
    if (path === '/api/ui/tasks' && get) return this.uiTasks(query, res)
    if ((name = tail('/api/ui/task/')) && get) return this.taskDetail(name, res)
    if (path === '/api/ui/overview' && get) return this.overview(res)
    if ((name = tail('/api/ui/control/'))) {
      needPost()
      return this.uiControl(name, await this.readBody(req), res)
    }
    if ((name = tail('/api/ui/retry/'))) {
      needPost()
      return this.retry(name, res)
    }
    if (path.startsWith('/api/ui/features') || path.startsWith('/api/ui/archive') || path.startsWith('/api/ui/lock') || path.startsWith('/api/ui/schedule')) return this.featureRoute(path, get, post, req, res)
    throw new HttpError(404, 'Not found')
  }

  // ---- archive, locks, schedule ---------------------------------------------

  /** The pages of the other features: reads are GET, each action a POST (as every other action here). */
  private async featureRoute(path: string, get: boolean, post: boolean, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const f = this.cluster.features
    const tail = (prefix: string): string | null => (path.startsWith(prefix) && path.length > prefix.length ? decodeURIComponent(path.slice(prefix.length)) : null)
    const action = async <T>(fn: () => Promise<T>): Promise<void> => {
      if (!post) throw new HttpError(405, 'Method not allowed: use POST', true)
      return this.json(res, 200, await this.answer(fn))
    }
    let name: string | null
    if (path === '/api/ui/features' && get) return this.json(res, 200, await f.present())
    // A page the dashboard does not show takes no action and answers no read (its store may not exist yet: an action would create it).
    const page = path.startsWith('/api/ui/archive') ? 'archive' : path.startsWith('/api/ui/lock') ? 'locks' : path.startsWith('/api/ui/schedule') ? 'schedule' : null
    if (page && !(await f.present())[page]) throw new HttpError(404, HIDDEN_PAGE[page], true)
    if (path === '/api/ui/archive' && get) return this.json(res, 200, await this.answer(() => f.archive()))
    if ((name = tail('/api/ui/archive/replay/'))) {
      const service = name
      const body = post ? await this.readBody(req) : ''
      return action(async () => {
        let selection: { ids?: unknown; all?: unknown }
        try {
          selection = JSON.parse(body || '{}') as typeof selection
        } catch {
          throw new HttpError(400, 'the body must be JSON: {"ids": [...]} or {"all": true}', true)
        }
        const ids = Array.isArray(selection.ids) ? selection.ids.filter((id): id is string => typeof id === 'string') : undefined
        return f.replay(service, { ids, all: selection.all === true })
      })
    }
    if (path === '/api/ui/locks' && get) return this.json(res, 200, await this.answer(() => f.lockList()))
    if ((name = tail('/api/ui/lock/rm/'))) {
      const id = name
      return action(() => f.lockRemove(id))
    }
    if ((name = tail('/api/ui/lock/')) && get) {
      const id = name
      return this.json(res, 200, await this.answer(() => f.lockShow(id)))
    }
    if (path === '/api/ui/schedule' && get) return this.json(res, 200, await this.answer(() => f.scheduleList()))
    for (const verb of ['add', 'set'] as const) {
      if ((name = tail(`/api/ui/schedule/${verb}/`))) {
        const entry = name
        const body = post ? await this.readBody(req) : ''
        return action(() => {
          const fields = entryFieldsOf(body)
          return verb === 'add' ? f.scheduleAdd(entry, fields) : f.scheduleSet(entry, fields)
        })
      }
    }
    for (const verb of ['enable', 'disable', 'rm'] as const) {
      if ((name = tail(`/api/ui/schedule/${verb}/`))) {
        const entry = name
        return action<unknown>(() => (verb === 'rm' ? f.scheduleRemove(entry) : f.scheduleSetEnabled(entry, verb === 'enable')))
      }
    }
    if ((name = tail('/api/ui/schedule/')) && get) {
      const entry = name
      return this.json(res, 200, await this.answer(() => f.scheduleShow(entry)))
    }
    throw new HttpError(404, 'Not found')
  }

  /** A feature's refusal (no such lock, entry, event) as the page shows it; any other failure says what it was, passwords masked. */
  private async answer<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (error) {
      if (error instanceof HttpError) throw error
      if (error instanceof FeatureError) throw new HttpError(error.status, error.message, true)
      const code = (error as { code?: unknown }).code
      const message = scrubSecrets((error as Error).message) as string
      throw new HttpError(code === 'BAD_ARGUMENT' || code === 'USAGE' ? 400 : 502, message, true)
    }
  }

  // ---- static ---------------------------------------------------------------

  private async serveIndex(res: ServerResponse): Promise<void> {
    this.indexHtml ??= await readFile(join(WEB_ROOT, 'index.html'), 'utf8')
    // The prefix is the operator's own flag value, still escaped for an attribute.
    const prefix = this.prefix.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
    res.setHeader('Content-Security-Policy', "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
    this.send(res, 200, this.indexHtml.replaceAll('%PREFIX%', prefix), MIME['.html']!)
  }

  private async serveStatic(rel: string, res: ServerResponse): Promise<void> {
    // The charting library is served from its package, as installed, rather than copied into ours.
    const vendor = VENDOR[rel]
    if (vendor) return this.send(res, 200, await readFile(createRequire(import.meta.url).resolve(vendor)), MIME[extname(vendor)]!)
    const clean = normalize(decodeURIComponent(rel)).replace(/^(\.\.(\/|\\|$))+/, '')
    if (clean.includes('..') || clean.startsWith('/')) throw new HttpError(404, 'Not found')
    const type = MIME[extname(clean)]
    if (!type) throw new HttpError(404, 'Not found')
    let body: Buffer
    try {
      body = await readFile(join(WEB_ROOT, clean))
    } catch {
      throw new HttpError(404, 'Not found')
    }
    this.send(res, 200, body, type)
  }

  // ---- Flower's workers API -------------------------------------------------

  private knownWorker(name: string): WorkerRecord {
    const worker = this.cluster.state.workers.get(name)
    if (!worker) throw new HttpError(404, `Unknown worker '${name}'`)
    return worker
  }

  private async listWorkers(query: URLSearchParams, res: ServerResponse): Promise<void> {
    const refresh = boolArg(query.get('refresh'))
    const status = boolArg(query.get('status'))
    const workername = query.get('workername')
    if (refresh) {
      try {
        await this.cluster.inspect(workername ?? undefined)
      } catch (error) {
        throw new HttpError(503, `Failed to update workers: ${(error as Error).message}`)
      }
    }
    if (status) {
      const info: Record<string, boolean> = {}
      for (const [name, worker] of this.cluster.state.workers) info[name] = this.cluster.state.alive(worker)
      return this.json(res, 200, info)
    }
    const inspected = (w: WorkerRecord): boolean => w.inspect.timestamp !== undefined
    if (workername) {
      const worker = this.cluster.state.workers.get(workername)
      if (!worker || !inspected(worker)) throw new HttpError(404, `Unknown worker '${workername}'`)
      return this.json(res, 200, { [workername]: scrubSecrets(worker.inspect) })
    }
    const out: Record<string, unknown> = {}
    // Scrubbed when stored and again here: whatever put it there, no password leaves.
    for (const [name, worker] of this.cluster.state.workers) if (inspected(worker)) out[name] = scrubSecrets(worker.inspect)
    this.json(res, 200, out)
  }

  /** The one node's reply, or the reason it gave (Flower's error_reason). */
  private replyOf(name: string, replies: Record<string, unknown>[]): { ok?: string; error?: string } | null {
    for (const reply of replies) if (reply[name] && typeof reply[name] === 'object') return reply[name] as { ok?: string; error?: string }
    return null
  }

  private async workerShutdown(name: string, res: ServerResponse): Promise<void> {
    this.knownWorker(name)
    await this.cluster.broadcast('shutdown', {}, { destination: [name], reply: false })
    this.json(res, 200, { message: 'Shutting down!' })
  }

  private async workerPool(action: string, name: string, args: URLSearchParams, res: ServerResponse): Promise<void> {
    this.knownWorker(name)
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
    const replies = await this.cluster.broadcast(method, params, { destination: [name] })
    const reply = this.replyOf(name, replies)
    if (reply && 'ok' in reply) return this.json(res, 200, { message: success })
    this.send(res, 403, escapeHtml(`${failure}: ${reply?.error ?? 'Unknown reason'}`), 'text/html; charset=UTF-8')
  }

  private async workerQueue(action: string, name: string, args: URLSearchParams, res: ServerResponse): Promise<void> {
    this.knownWorker(name)
    const queue = args.get('queue')
    if (!queue) throw new HttpError(400, 'Missing argument queue')
    const method = action === 'add-consumer' ? 'add_consumer' : 'cancel_consumer'
    const replies = await this.cluster.broadcast(method, { queue }, { destination: [name] })
    const reply = this.replyOf(name, replies)
    if (reply && 'ok' in reply) return this.json(res, 200, { message: reply.ok })
    const failure = action === 'add-consumer' ? `Failed to add '${queue}' consumer to '${name}' worker` : `Failed to cancel '${queue}' consumer from '${name}' worker`
    this.send(res, 403, escapeHtml(`${failure}: ${reply?.error ?? 'Unknown reason'}`), 'text/html; charset=UTF-8')
  }

  // ---- Flower's tasks API ---------------------------------------------------

  private taskQuery(query: URLSearchParams): Parameters<Cluster['state']['queryTasks']>[0] {
    const all = (v: string | null): string | null => (v && v !== 'All' ? v : null)
    const sortBy = query.get('sort_by')
    if (sortBy && !SORT_KEYS.has(sortBy.replace(/^-/, ''))) throw new HttpError(400, `sort_by: unknown field '${sortBy.replace(/^-/, '')}'`, true)
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

  private runQuery(query: URLSearchParams, count = true): ReturnType<Cluster['state']['queryTasks']> {
    try {
      return this.cluster.state.queryTasks({ ...this.taskQuery(query), count })
    } catch (error) {
      if (error instanceof QuerySyntaxError) throw new HttpError(400, error.message, true)
      throw error
    }
  }

  private listTasks(query: URLSearchParams, res: ServerResponse): void {
    // Flower's answer is the page alone: no count, so the walk ends with the page.
    const page = this.runQuery(query, false)
    const out: Record<string, unknown> = {}
    for (const task of page.tasks) out[task.uuid] = this.cluster.state.taskAsDict(task)
    this.json(res, 200, out)
  }

  private taskInfo(id: string, res: ServerResponse): void {
    const task = this.cluster.state.tasks.get(id)
    if (!task) throw new HttpError(404, `Unknown task '${id}'`)
    this.json(res, 200, { ...this.cluster.state.taskAsDict(task), 'task-id': task.uuid })
  }

  private resultFields(meta: { status: string; result: unknown; traceback?: string | null }): Record<string, unknown> {
    return meta.status === 'FAILURE' ? { result: meta.result, traceback: meta.traceback ?? null } : { result: meta.result }
  }

  private async taskResult(id: string, query: URLSearchParams, res: ServerResponse): Promise<void> {
    if (!this.cluster.hasBackend()) throw new HttpError(503, 'No result backend configured')
    const timeout = floatArg(query.get('timeout'), 'timeout')
    const meta = await this.storedResult(id, timeout ? timeout * 1000 : undefined)
    const response: Record<string, unknown> = { 'task-id': id, state: meta?.status ?? 'PENDING' }
    if (meta && (timeout || FINISHED_STATES.has(meta.status))) Object.assign(response, this.resultFields(meta))
    this.json(res, 200, response)
  }

  /** The backend's answer; a stored result the decoder refuses (a pickle over the limits, code in it) is a 502 saying so, not a 500. */
  private async storedResult(id: string, timeoutMs?: number): Promise<Awaited<ReturnType<Cluster['result']>>> {
    try {
      return await this.cluster.result(id, timeoutMs)
    } catch (error) {
      if (error instanceof ProtocolError) throw new HttpError(502, `the stored result of '${id}' is refused: ${error.message}`, true)
      throw error
    }
  }

  private knownTaskNames(): Set<string> {
    const names = new Set(this.o.appTasks ?? [])
    for (const name of this.cluster.state.taskTypes) names.add(name)
    for (const worker of this.cluster.state.workers.values()) {
      const registered = worker.inspect.registered
      if (Array.isArray(registered)) for (const r of registered) if (typeof r === 'string') names.add(r.split(' ')[0]!)
    }
    return names
  }

  private async applyTask(kind: string, name: string, body: string, res: ServerResponse): Promise<void> {
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
    if (kind !== 'send-task' && !this.knownTaskNames().has(name)) throw new HttpError(404, `Unknown task '${name}'`)
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
    const id = await this.cluster.sendTask(name, args, kwargs as Record<string, unknown>, send)
    const response: Record<string, unknown> = { 'task-id': id }
    if (kind === 'apply') {
      if (this.cluster.hasBackend()) {
        const meta = await this.storedResult(id, 24 * 3600 * 1000)
        Object.assign(response, meta ? this.resultFields(meta) : { result: null }, { state: meta?.status ?? 'PENDING' })
      }
    } else if (this.cluster.hasBackend()) {
      response.state = (await this.cluster.result(id))?.status ?? 'PENDING'
    }
    this.json(res, 200, response)
  }

  private async revoke(id: string, args: URLSearchParams, res: ServerResponse): Promise<void> {
    const terminate = boolArg(args.get('terminate'))
    const signal = args.get('signal') ?? 'SIGTERM'
    if (!/^(SIG)?[A-Z0-9]+$/i.test(signal)) throw new HttpError(400, `signal: not a signal name: '${signal}'`)
    await this.cluster.broadcast('revoke', { task_id: id, terminate, signal }, { reply: false })
    this.json(res, 200, { message: `Revoked '${id}'` })
  }

  private taskControlTarget(taskname: string, args: URLSearchParams): string {
    const workername = args.get('workername')
    if (!workername) throw new HttpError(400, 'Missing argument workername')
    if (!this.knownTaskNames().has(taskname)) throw new HttpError(404, `Unknown task '${taskname}'`)
    this.knownWorker(workername)
    return workername
  }

  private async taskTimeout(taskname: string, args: URLSearchParams, res: ServerResponse): Promise<void> {
    const workername = this.taskControlTarget(taskname, args)
    const hard = floatArg(args.get('hard'), 'hard')
    const soft = floatArg(args.get('soft'), 'soft')
    const replies = await this.cluster.broadcast('time_limit', { task_name: taskname, hard, soft }, { destination: [workername] })
    const reply = this.replyOf(workername, replies)
    if (reply && 'ok' in reply) return this.json(res, 200, { message: reply.ok })
    this.send(res, 403, escapeHtml(`Failed to set timeouts: '${reply?.error ?? 'Unknown reason'}'`), 'text/html; charset=UTF-8')
  }

  private async taskRateLimit(taskname: string, args: URLSearchParams, res: ServerResponse): Promise<void> {
    const workername = this.taskControlTarget(taskname, args)
    const ratelimit = args.get('ratelimit')
    if (ratelimit === null) throw new HttpError(400, 'Missing argument ratelimit')
    const replies = await this.cluster.broadcast('rate_limit', { task_name: taskname, rate_limit: ratelimit }, { destination: [workername] })
    const reply = this.replyOf(workername, replies)
    if (reply && 'ok' in reply) return this.json(res, 200, { message: reply.ok })
    this.send(res, 403, escapeHtml(`Failed to set rate limit: '${reply?.error ?? 'Unknown reason'}'`), 'text/html; charset=UTF-8')
  }

  // ---- the pages' JSON ------------------------------------------------------

  private summary(): Record<string, unknown> {
    const state = this.cluster.state
    const workers = [...state.workers.values()]
    return {
      broker: this.cluster.displayUrl,
      connected: this.cluster.connected,
      events: state.eventCount,
      tasks: state.tasks.size,
      maxTasks: state.maxTasks,
      workersOnline: workers.filter((w) => state.alive(w)).length,
      workers: workers.length,
      unreadableEvents: this.cluster.unreadableEvents,
      refusedEvents: this.cluster.refusedEvents,
      lag: this.cluster.lastLag,
      // What the held state takes (the heap in use) beside what the process holds (V8 keeps freed pages a while).
      heapUsedMb: Math.round(process.memoryUsage().heapUsed / 1e5) / 10,
    }
  }

  workerSummary(w: WorkerRecord): Record<string, unknown> {
    const stats = (w.inspect.stats ?? {}) as { pool?: { 'max-concurrency'?: number; implementation?: string; processes?: unknown[] }; total?: Record<string, number> }
    const queues = Array.isArray(w.inspect.active_queues) ? (w.inspect.active_queues as { name?: string }[]).map((q) => q.name).filter(Boolean) : []
    const pool = stats.pool ?? {}
    const impl = typeof pool.implementation === 'string' ? pool.implementation.replace(/^celery\.concurrency\.|:TaskPool$/g, '') : null
    return {
      hostname: w.hostname,
      online: this.cluster.state.alive(w),
      software: [w.sw_ident, w.sw_ver].filter(Boolean).join(' ') || null,
      pid: w.pid,
      pool: impl,
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

  private async workerDetail(name: string, query: URLSearchParams, res: ServerResponse): Promise<void> {
    const worker = this.knownWorker(name)
    if (boolArg(query.get('refresh'))) await this.cluster.inspect(name).catch(() => undefined)
    this.json(res, 200, { summary: this.workerSummary(worker), inspect: scrubSecrets(worker.inspect), counter: worker.counter })
  }

  taskRow(t: TaskRecord): Record<string, unknown> {
    const f = t.fields
    return { uuid: t.uuid, name: f.name ?? null, state: t.state, args: f.args ?? null, kwargs: f.kwargs ?? null, result: f.result ?? null, received: f.received ?? null, started: f.started ?? null, runtime: f.runtime ?? null, worker: t.worker, timestamp: f.timestamp ?? null }
  }

  private uiTasks(query: URLSearchParams, res: ServerResponse): void {
    const page = this.runQuery(query)
    this.json(res, 200, { rows: page.tasks.map((t) => this.taskRow(t)), filtered: page.filtered, total: page.total, taskTypes: [...this.cluster.state.taskTypes].sort(), workers: [...this.cluster.state.workers.keys()].sort() })
  }

  private taskDetail(id: string, res: ServerResponse): void {
    const state = this.cluster.state
    const task = state.tasks.get(id)
    if (!task) throw new HttpError(404, `Unknown task '${id}'`)
    const brief = (uuid: string | null | undefined): Record<string, unknown> | null => {
      if (!uuid) return null
      const t = state.tasks.get(uuid)
      return t ? { uuid, name: t.fields.name ?? null, state: t.state } : { uuid, name: null, state: null }
    }
    const children = task.children.map((c) => brief(c))
    // The workflow a chain or chord is: the tasks under the root, by parent.
    const rootId = typeof task.fields.root_id === 'string' ? task.fields.root_id : task.uuid
    const family: Record<string, unknown>[] = []
    const walk = (uuid: string, depth: number): void => {
      if (family.length >= 200 || depth > 50) return
      const t = state.tasks.get(uuid)
      family.push({ ...brief(uuid), depth, group: t?.fields.group ?? null })
      for (const child of t?.children ?? []) walk(child, depth + 1)
    }
    walk(rootId, 0)
    this.json(res, 200, { task: state.taskAsDict(task), timeline: task.timeline, parent: brief(task.fields.parent_id as string | undefined), root: brief(rootId), children, family })
  }

  private overview(res: ServerResponse): void {
    const queues: Record<string, unknown> = {}
    for (const [name, samples] of this.cluster.queueHistory) queues[name] = samples
    this.json(res, 200, { throughput: this.cluster.throughput, queues, summary: this.summary() })
  }

  private async uiControl(method: string, body: string, res: ServerResponse): Promise<void> {
    if (!UI_COMMANDS.has(method)) throw new HttpError(404, `Unknown command '${method}'`)
    let input: { destination?: unknown; arguments?: unknown }
    // The arguments go out in a control request, which a worker refuses past this depth.
    if (jsonDepthExceeds(body, DEFAULT_MAX_DEPTH)) throw new HttpError(400, `Body: nests deeper than ${DEFAULT_MAX_DEPTH} levels`)
    try {
      input = body ? (JSON.parse(body) as typeof input) : {}
    } catch {
      throw new HttpError(400, 'Body: expected JSON')
    }
    const destination = Array.isArray(input.destination) ? input.destination.filter((d): d is string => typeof d === 'string') : null
    const args = input.arguments && typeof input.arguments === 'object' && !Array.isArray(input.arguments) ? (input.arguments as Record<string, unknown>) : {}
    const replies = await this.cluster.broadcast(method, args, { destination, reply: method !== 'shutdown' || destination !== null })
    // A changed pool shows at once on the worker's page.
    if (destination && method !== 'shutdown') for (const d of destination) void this.cluster.inspect(d).catch(() => undefined)
    this.json(res, 200, { replies: scrubSecrets(replies) })
  }

  /** Sends the task again with its message's exact arguments (from the result backend); refused with the reason where they are not stored. */
  private async retry(id: string, res: ServerResponse): Promise<void> {
    try {
      this.json(res, 200, { 'task-id': await this.cluster.resend(id) })
    } catch (error) {
      if (error instanceof ResendRefusedError) throw new HttpError(409, error.message, true)
      if (error instanceof ProtocolError) throw new HttpError(502, `the stored result of '${id}' is refused: ${error.message}`, true)
      throw error
    }
  }

  // ---- live stream ----------------------------------------------------------

  private stream(req: IncomingMessage, res: ServerResponse): void {
    res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' })
    const client: StreamClient = { res, stalled: false }
    this.clients.add(client)
    res.write(`retry: 2000\nevent: hello\ndata: ${JSON.stringify(this.summary())}\n\n`)
    const ping = setInterval(() => this.write(client, ': ping\n\n'), 15_000)
    const done = (): void => {
      clearInterval(ping)
      this.clients.delete(client)
      if (this.clients.size === 0) {
        this.changedTasks.clear()
        this.changedWorkers.clear()
      }
    }
    req.on('close', done)
    res.on('error', done)
    res.on('drain', () => {
      if (client.stalled) {
        client.stalled = false
        this.write(client, `event: resync\ndata: {}\n\n`)
      }
    })
  }

  private write(client: StreamClient, text: string): void {
    if (client.stalled || client.res.destroyed) return
    try {
      // A client that reads slower than events come is told to reload its view later, not buffered without end.
      if (!client.res.write(text)) client.stalled = true
    } catch {
      this.clients.delete(client)
    }
  }

  private flush(): void {
    this.flushTimer = undefined
    // Runs from a timer: whatever a task holds, a failure here must not end the process.
    try {
      this.flushChanges()
    } catch (error) {
      this.changedTasks.clear()
      this.changedWorkers.clear()
      this.o.log?.(`live update failed: ${(error as Error).message}`)
      for (const client of this.clients) this.write(client, `event: resync\ndata: {}\n\n`)
    }
  }

  private flushChanges(): void {
    const state = this.cluster.state
    const ids = [...this.changedTasks]
    this.changedTasks.clear()
    const tasks = ids.slice(-SSE_MAX_TASKS).map((id) => state.tasks.get(id)).filter((t): t is TaskRecord => Boolean(t)).map((t) => this.taskRow(t))
    const workers = [...this.changedWorkers].map((name) => state.workers.get(name)).filter((w): w is WorkerRecord => Boolean(w)).map((w) => this.workerSummary(w))
    this.changedWorkers.clear()
    const data = JSON.stringify({ tasks, more: ids.length > SSE_MAX_TASKS, newTasks: ids.length, workers, summary: this.summary() })
    for (const client of this.clients) this.write(client, `event: update\ndata: ${data}\n\n`)
  }
}

/**
 * The body of a schedule add or set: a JSON object with the fields of `tsq
 * schedule add`'s flags (task, every, cron, relative, args, kwargs, queue,
 * priority, expires), each a string as typed, but relative a boolean and
 * priority an integer. A field left out is a flag not given.
 */
export function entryFieldsOf(body: string): EntryFlags {
  let raw: unknown
  if (jsonDepthExceeds(body, DEFAULT_MAX_DEPTH)) throw new HttpError(400, `the body nests deeper than ${DEFAULT_MAX_DEPTH} levels`, true)
  try {
    raw = JSON.parse(body || '{}')
  } catch {
    throw new HttpError(400, 'the body must be a JSON object of the entry\'s fields', true)
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new HttpError(400, 'the body must be a JSON object of the entry\'s fields', true)
  const fields: EntryFlags = {}
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if (value === undefined || value === null) continue
    if (key === 'relative') {
      if (typeof value !== 'boolean') throw new HttpError(400, 'relative must be true or false', true)
      fields.relative = value
    } else if (key === 'priority') {
      if (typeof value !== 'number' || !Number.isInteger(value)) throw new HttpError(400, `priority must be an integer, got ${JSON.stringify(value)}`, true)
      fields.priority = value
    } else if (key === 'task' || key === 'every' || key === 'cron' || key === 'args' || key === 'kwargs' || key === 'queue' || key === 'expires') {
      if (typeof value !== 'string') throw new HttpError(400, `${key} must be a string, got ${JSON.stringify(value)}`, true)
      fields[key] = value
    } else throw new HttpError(400, `unknown field ${JSON.stringify(key)}`, true)
  }
  return fields
}
