// Remote-control ("pidbox") messages (spec §3.2, §3.3): the broadcast request,
// its headers, the worker's destination rule and the `{node: reply}` body.

import { dumps, loads } from '../codecs/kombu-json.js'
import { MalformedMessageError } from '../errors.js'
import { checkJsonText } from '../codecs/limits.js'

export interface ControlReplyTo {
  exchange: string
  routing_key: string
}

export interface ControlRequest {
  method: string
  arguments: Record<string, unknown>
  destination: string[] | null
  pattern: string | null
  matcher: string | null
  ticket?: string
  reply_to?: ControlReplyTo
}

/** Request body in kombu's key order; ticket and reply_to only when a reply is wanted. */
export function encodeControlRequest(r: ControlRequest): string {
  const body: Record<string, unknown> = {
    method: r.method,
    arguments: r.arguments,
    destination: r.destination,
    pattern: r.pattern,
    matcher: r.matcher,
  }
  if (r.ticket !== undefined) body.ticket = r.ticket
  if (r.reply_to !== undefined) body.reply_to = { exchange: r.reply_to.exchange, routing_key: r.reply_to.routing_key }
  return dumps(body)
}

function optString(o: Record<string, unknown>, key: string): string | null {
  const v = o[key]
  if (v === undefined || v === null) return null
  if (typeof v !== 'string') throw new MalformedMessageError(`control request ${key} must be a string`)
  return v
}

/** Parse a request body; throws MalformedMessageError for shapes kombu could not dispatch. */
export function decodeControlRequest(text: string): ControlRequest {
  checkJsonText(text, 'control request')
  let v: unknown
  try {
    v = loads(text)
  } catch (cause) {
    throw new MalformedMessageError(`control request is not valid JSON: ${(cause as Error).message}`, { cause })
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new MalformedMessageError('control request must be a JSON object')
  const o = v as Record<string, unknown>
  if (typeof o.method !== 'string' || o.method === '') throw new MalformedMessageError('control request has no method')
  const args = o.arguments ?? {}
  if (typeof args !== 'object' || args === null || Array.isArray(args))
    throw new MalformedMessageError('control request arguments must be an object')
  let destination: string[] | null = null
  if (o.destination !== undefined && o.destination !== null) {
    // kombu only sends lists, but a bare string still means "that node".
    const d = typeof o.destination === 'string' ? [o.destination] : o.destination
    if (!Array.isArray(d) || !d.every((x) => typeof x === 'string'))
      throw new MalformedMessageError('control request destination must be a list of node names')
    destination = d as string[]
  }
  const req: ControlRequest = {
    method: o.method,
    arguments: args as Record<string, unknown>,
    destination,
    pattern: optString(o, 'pattern'),
    matcher: optString(o, 'matcher'),
  }
  const ticket = optString(o, 'ticket')
  if (ticket !== null) req.ticket = ticket
  const rt = o.reply_to
  if (rt !== undefined && rt !== null) {
    const r = rt as Record<string, unknown>
    if (typeof rt !== 'object' || typeof r.exchange !== 'string' || typeof r.routing_key !== 'string') {
      throw new MalformedMessageError('control request reply_to must be {exchange, routing_key}')
    }
    req.reply_to = { exchange: r.exchange, routing_key: r.routing_key }
  }
  return req
}

/**
 * Request headers: the Lamport clock and `expires` (unix seconds; kombu sends
 * `time() + timeout`, or the int 0 without a timeout). A plain number on
 * purpose: AMQP header tables need primitives, and the 5.2 worker ignores
 * `expires`, so an integral value losing its `.0` is harmless.
 */
export function controlRequestHeaders(clock: number, expiresUnix: number): { clock: number; expires: number } {
  return { clock, expires: expiresUnix }
}

/** The reply headers a worker sends: `{ticket, clock}`. */
export function controlReplyHeaders(ticket: string | undefined, clock: number): { ticket: string | null; clock: number } {
  return { ticket: ticket ?? null, clock }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
}

/** Python's fnmatch.fnmatchcase translated to a RegExp (full match, `*`, `?`, `[...]`, `[!...]`). */
export function fnmatchToRegExp(pattern: string): RegExp {
  let out = ''
  let i = 0
  while (i < pattern.length) {
    const c = pattern[i++] as string
    if (c === '*') out += '[\\s\\S]*'
    else if (c === '?') out += '[\\s\\S]'
    else if (c === '[') {
      let j = i
      if (pattern[j] === '!') j++
      if (pattern[j] === ']') j++
      while (j < pattern.length && pattern[j] !== ']') j++
      if (j >= pattern.length) out += '\\['
      else {
        let stuff = pattern.slice(i, j).replace(/\\/g, '\\\\')
        i = j + 1
        if (stuff.startsWith('!')) stuff = `^${stuff.slice(1)}`
        else if (stuff.startsWith('^')) stuff = `\\${stuff}`
        out += `[${stuff}]`
      }
    } else out += escapeRegExp(c)
  }
  return new RegExp(`^(?:${out})$`)
}

/** kombu.matcher: `glob` is fnmatch (full match), `pcre` is Python re.match (anchored at the start only). */
export function matchPattern(value: string, pattern: string, matcher: string): boolean {
  try {
    if (matcher === 'glob') return fnmatchToRegExp(pattern).test(value)
    if (matcher === 'pcre') return new RegExp(`^(?:${pattern})`).test(value)
  } catch {
    return false
  }
  // kombu raises MatcherNotInstalled and the node never dispatches.
  return false
}

/** Spec §3.3 rule 2: should this node run the request? */
export function matchesDestination(req: Pick<ControlRequest, 'destination' | 'pattern' | 'matcher'>, nodename: string): boolean {
  if (req.destination && req.destination.length > 0) return req.destination.includes(nodename)
  if (req.pattern && req.matcher) return matchPattern(nodename, req.pattern, req.matcher)
  return true
}

/** Reply body `{nodename: reply}`. */
export function encodeControlReply(nodename: string, reply: unknown): string {
  return dumps({ [nodename]: reply })
}

/** A reply body: exactly one `{node: reply}` pair in practice; returned as entries. */
export function decodeControlReply(text: string): Array<[node: string, reply: unknown]> {
  checkJsonText(text, 'control reply')
  let v: unknown
  try {
    v = loads(text)
  } catch (cause) {
    throw new MalformedMessageError(`control reply is not valid JSON: ${(cause as Error).message}`, { cause })
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw new MalformedMessageError('control reply must be a JSON object {node: reply}')
  return Object.entries(v as Record<string, unknown>)
}
