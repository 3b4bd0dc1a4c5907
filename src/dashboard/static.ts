// The front-end's files: the one page every path of the UI loads (with the
// --url-prefix written into it, the state its tables start with, and a strict
// CSP), and web/'s scripts and styles, with the charting library served from
// its own package.
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { extname, join, normalize } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { DashboardContext } from './context.js'
import { HttpError, send, type Call } from './http.js'
import { initialState, scriptJson } from './initial-state.js'

/**
 * The front-end's files. The same relative step works from src/dashboard
 * (tests through tsx), dist/dashboard and dist/bundle (the bundled CLI): this
 * module stays at the top of dashboard/.
 */
export const WEB_ROOT = fileURLToPath(new URL('../dashboard/web/', import.meta.url))

const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
}
const VENDOR: Record<string, string> = { 'vendor/uPlot.js': 'uplot/dist/uPlot.iife.min.js', 'vendor/uPlot.css': 'uplot/dist/uPlot.min.css' }
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

/** The paths the pages' own router answers (web/app.js): each is the one page. `*`: any rest. */
export const PAGES = [
  '/',
  '/workers',
  '/tasks',
  '/queues',
  '/broker',
  '/overview',
  '/archive',
  '/failed',
  '/locks',
  '/schedule',
  '/worker/*',
  '/task/*',
]

/** index.html around its `%INITIAL%` mark, where the page's state goes. */
let indexParts: [string, string] | undefined

export async function serveIndex(d: DashboardContext, c: Call): Promise<void> {
  if (!indexParts) {
    const html = await readFile(join(WEB_ROOT, 'index.html'), 'utf8')
    const mark = html.indexOf('%INITIAL%')
    if (mark === -1) throw new Error(`${join(WEB_ROOT, 'index.html')} has no %INITIAL% mark`)
    indexParts = [html.slice(0, mark), html.slice(mark + '%INITIAL%'.length)]
  }
  // The prefix is the operator's own flag value, still escaped for an attribute.
  const prefix = d.prefix.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`)
  const [head, tail] = indexParts
  // The state is not a script (its block's type is JSON): the CSP's script-src stays 'self'.
  const initial = scriptJson(initialState(d.cluster, c.path, c.query))
  c.res.setHeader('Content-Security-Policy', CSP)
  send(c.res, 200, `${head.replaceAll('%PREFIX%', prefix)}${initial}${tail.replaceAll('%PREFIX%', prefix)}`, MIME['.html']!)
}

/** A file of web/ by the rest of its path under /static/ (as written: decoded here once). */
export async function serveStatic(_d: DashboardContext, c: Call): Promise<void> {
  const rel = c.param
  // The charting library is served from its package, as installed, rather than copied into ours.
  const vendor = VENDOR[rel]
  if (vendor) return send(c.res, 200, await readFile(createRequire(import.meta.url).resolve(vendor)), MIME[extname(vendor)]!)
  let decoded: string
  try {
    decoded = decodeURIComponent(rel)
  } catch {
    throw new HttpError(404, 'Not found')
  }
  const clean = normalize(decoded).replace(/^(\.\.(\/|\\|$))+/, '')
  if (clean.includes('..') || clean.startsWith('/')) throw new HttpError(404, 'Not found')
  const type = MIME[extname(clean)]
  if (!type) throw new HttpError(404, 'Not found')
  let body: Buffer
  try {
    body = await readFile(join(WEB_ROOT, clean))
  } catch {
    throw new HttpError(404, 'Not found')
  }
  send(c.res, 200, body, type)
}
