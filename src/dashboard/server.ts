// The dashboard's HTTP server: Flower's REST API (same paths, parameters and
// JSON shapes), /metrics, /healthcheck, the pages' own JSON and their live
// stream, and the static front-end from web/. Each request passes the same
// gates in the same order (the prefix, the Host, credentials, the method and
// the sending page), then goes to its row of the route table (routes.ts).
//
// node:http rather than a framework: a table of fixed routes, one auth rule
// and one cross-site rule are all a router would do here, and the process
// stays one dependency lighter for a long-running monitor.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { allowedHostNames, authorized, checkHost, checkSameOrigin } from './access.js'
import type { Cluster } from './cluster.js'
import type { DashboardContext } from './context.js'
import { requirePage } from './features-api.js'
import { HttpError, send, sendJson } from './http.js'
import { paramOf, RouteTable, takes } from './routes.js'
import { LiveStream } from './stream.js'

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

export class DashboardServer {
  private server: Server | undefined
  private readonly prefix: string
  private readonly routes = new RouteTable()
  private readonly context: DashboardContext
  /** null: any Host (--allowed-hosts '*'). */
  private readonly allowedHosts: Set<string> | null

  constructor(private readonly o: ServerOptions) {
    this.allowedHosts = allowedHostNames(o.address, o.allowedHosts)
    let prefix = (o.urlPrefix ?? '').replace(/^\/*/, '/').replace(/\/+$/, '')
    if (prefix === '/') prefix = ''
    this.prefix = prefix
    this.context = { cluster: o.cluster, appTasks: o.appTasks ?? [], prefix, stream: new LiveStream(o.cluster, o.log) }
  }

  listen(): Promise<{ port: number; url: string }> {
    const server = createServer((req, res) => void this.handle(req, res))
    this.server = server
    server.keepAliveTimeout = 5000
    return new Promise((resolve, reject) => {
      server.once('error', (error: NodeJS.ErrnoException) => {
        reject(
          Object.assign(
            new Error(
              `cannot listen on ${this.o.address}:${this.o.port}: ${error.code === 'EADDRINUSE' ? 'address already in use' : error.message}`,
            ),
            { code: 'USAGE' },
          ),
        )
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
    this.context.stream.close()
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
      checkHost(req, this.allowedHosts)
      const matched = this.routes.match(path)
      const method = req.method ?? 'GET'
      if (!matched?.route.open) {
        if (!authorized(req, this.o.basicAuth)) {
          res.setHeader('WWW-Authenticate', 'Basic realm="tsq dashboard"')
          throw new HttpError(401, 'Unauthorized')
        }
        if (method === 'POST') checkSameOrigin(req, this.allowedHosts)
        else if (method !== 'GET' && method !== 'HEAD') throw new HttpError(405, 'Method not allowed')
      }
      if (!matched) throw new HttpError(404, 'Not found')
      const { route } = matched
      if (route.page) await requirePage(this.context, route.page)
      if (!takes(route, method)) {
        res.setHeader('Allow', route.method === 'GET' ? 'GET, HEAD' : route.method)
        throw new HttpError(405, `Method not allowed: use ${route.method}`, route.json)
      }
      await route.handler(this.context, { req, res, path, query: url.searchParams, param: paramOf(matched) })
    } catch (error) {
      if (res.headersSent) {
        res.end()
        return
      }
      if (error instanceof HttpError) {
        if (error.json) return sendJson(res, error.status, { error: error.message })
        return send(res, error.status, `${error.message}\n`, 'text/plain; charset=utf-8')
      }
      this.o.log?.(`request failed: ${(error as Error).message}`)
      send(res, 500, 'Internal error\n', 'text/plain; charset=utf-8')
    }
  }
}
