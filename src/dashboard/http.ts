// The dashboard's HTTP plumbing, below every route: the error a handler
// throws for a status, writing an answer (text, JSON with Python's big ints,
// an escaped error page), reading a body within its limit, and the request
// arguments as tornado (Flower's server) reads them.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { dumps, TsqError } from '../protocol/index.js'

/** A request's body past this many bytes is refused (413) unread. */
export const MAX_BODY = 1 << 20

/** An answer other than 200, with its `status`: a line of text, or `{"error": ...}` where the pages read JSON. */
export class HttpError extends TsqError {
  constructor(
    readonly status: number,
    message: string,
    readonly json = false,
  ) {
    super('HTTP_STATUS', message)
  }
}

/** One request as a route's handler sees it. */
export interface Call {
  req: IncomingMessage
  res: ServerResponse
  /** The path below --url-prefix. */
  path: string
  query: URLSearchParams
  /** What the route's `:name` took, decoded (`*`: the rest as written); '' for a path without one. */
  param: string
}

export function send(res: ServerResponse, status: number, body: string | Buffer, type: string): void {
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' })
  res.end(body)
}

/** A value as JSON text. */
export function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value)
  } catch (error) {
    // A stored result's int past 2**53 is a BigInt: written digit for digit by kombu's JSON, as Flower's json writes it.
    if (!(error instanceof TypeError && /BigInt/.test(error.message))) throw error
    return dumps(value)
  }
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, jsonText(value), 'application/json; charset=UTF-8')
}

/** What an error page echoes, safe in HTML. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

/** Flower's refusal of a control action (its 403 page): the reason, escaped. */
export function sendRefusal(res: ServerResponse, text: string): void {
  send(res, 403, escapeHtml(text), 'text/html; charset=UTF-8')
}

export async function readBody(req: IncomingMessage): Promise<string> {
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
export async function formArgs(c: Call): Promise<URLSearchParams> {
  const args = new URLSearchParams(c.query)
  if (c.req.method === 'POST' && (c.req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
    for (const [k, v] of new URLSearchParams(await readBody(c.req))) args.append(k, v)
  }
  return args
}

/** tornado's bool argument: anything but a false word is true. */
export function boolArg(value: string | null): boolean {
  if (value === null) return false
  return !['', '0', 'false', 'no', 'off'].includes(value.toLowerCase())
}

export function intArg(value: string | null, name: string, fallback: number | null): number | null {
  if (value === null || value === '') return fallback
  if (!/^-?\d+$/.test(value)) throw new HttpError(400, `${name}: expected an integer, got '${value}'`)
  return Number(value)
}

export function floatArg(value: string | null, name: string): number | null {
  if (value === null || value === '') return null
  const n = Number(value)
  if (!Number.isFinite(n)) throw new HttpError(400, `${name}: expected a number, got '${value}'`)
  return n
}
