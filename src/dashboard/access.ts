// Who may ask the dashboard anything: the Host a request names (against DNS
// rebinding), its basic-auth credentials (Flower's --basic-auth), and, for a
// request that changes something, the page that sent it (Origin,
// Sec-Fetch-Site). Each refusal is an HttpError with its status.
import type { IncomingMessage } from 'node:http'
import { timingSafeEqual } from 'node:crypto'
import { hostname as machineName, networkInterfaces } from 'node:os'
import { HttpError } from './http.js'

const LOOPBACK = ['localhost', '127.0.0.1', '::1']

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

/**
 * 421 Misdirected Request for a Host this dashboard does not answer to
 * (`allowed` null: any). A request without Host (HTTP/1.0) has no name to rebind.
 */
export function checkHost(req: IncomingMessage, allowed: Set<string> | null): void {
  const host = req.headers.host
  if (allowed === null || host === undefined) return
  if (!allowed.has(hostName(host))) {
    const shown = host.replace(/[^\x20-\x7e]/g, '?').slice(0, 200)
    throw new HttpError(421, `Misdirected Request: this dashboard does not answer to host '${shown}' (allow it with --allowed-hosts)`)
  }
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/** Basic auth against the accounts given (none given: everyone); every account is compared, in constant time. */
export function authorized(req: IncomingMessage, accounts: readonly { user: string; pass: string }[] | undefined): boolean {
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

/**
 * A state-changing request must come from this dashboard's own pages or
 * from a non-browser client: a browser names the page that sent it
 * (Origin, Sec-Fetch-Site), and another site's page is refused.
 */
export function checkSameOrigin(req: IncomingMessage, allowed: Set<string> | null): void {
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
    if (host !== req.headers.host || (allowed !== null && !allowed.has(hostName(host))))
      throw new HttpError(403, 'Cross-site request refused')
  }
}
