// Task messages (spec §1): encode protocol v2 exactly as Celery 5.2.6's
// `as_task_v2` + `send_task` do, and decode v2, v1 and hybrid messages the way
// the worker's strategy does, refusing what Celery would reject.

import { dumps } from '../codecs/kombu-json.js'
import { MalformedMessageError } from '../errors.js'
import { formatIsoDate, parseIsoDate } from '../iso-date.js'
import { argsRepr, kwargsRepr, saferepr } from '../codecs/python-repr.js'
import { decodeBody, encodeBody, type BodyDecoder, type BodyEncoder } from '../codecs/message-body.js'
import { uuid4 } from '../uuid.js'
import { DEFAULT_MESSAGE_LIMITS, checkValueLimits } from '../codecs/limits.js'
import type { Signature } from './canvas.js'

export interface TaskEmbed {
  callbacks: Signature[] | null
  errbacks: Signature[] | null
  chain: Signature[] | null
  chord: Signature | null
}

export interface TaskSendOptions {
  id?: string
  args?: unknown[]
  kwargs?: Record<string, unknown>
  countdown?: number
  eta?: Date | string
  /** A number is seconds from now. */
  expires?: Date | number | string
  priority?: number
  timeLimit?: number | null
  softTimeLimit?: number | null
  retries?: number
  rootId?: string | null
  parentId?: string | null
  group?: string | null
  groupIndex?: number | null
  shadow?: string | null
  origin: string
  ignoreResult?: boolean
  replyTo?: string
  embed?: Partial<TaskEmbed>
  /** Override the computed reprs (beat sends `saferepr(list)`, e.g. `[1, 2]`). */
  argsrepr?: string
  kwargsrepr?: string
  /** Merged after Celery's own headers (apply_async(headers=...)). */
  headers?: Record<string, unknown>
  now?: Date
}

export interface EncodedMessage {
  /** JSON text as kombu dumps it. */
  body: string
  contentType: 'application/json'
  contentEncoding: 'utf-8'
  /** The v2 header table, in Celery's insertion order. */
  headers: Record<string, unknown>
  properties: {
    correlationId: string
    replyTo: string
    deliveryMode: 2
    priority: number
    expiration?: string
  }
}

function embedOf(e: Partial<TaskEmbed> | undefined): TaskEmbed {
  return { callbacks: e?.callbacks ?? null, errbacks: e?.errbacks ?? null, chain: e?.chain ?? null, chord: e?.chord ?? null }
}

function checkSeconds(value: number, what: string): void {
  if (!Number.isFinite(value)) throw new TypeError(`${what} must be a finite number of seconds, got ${value}`)
}

/** Build a protocol v2 task message (spec §1.1, §1.3, §1.4). */
export function encodeTaskV2(name: string, options: TaskSendOptions): EncodedMessage {
  const { value, headers, properties } = taskV2Parts(name, options, options.origin)
  return { body: dumps(value), contentType: 'application/json', contentEncoding: 'utf-8', headers, properties }
}

/** A v2 task message whose body goes through task_serializer (json, msgpack, yaml, or signed with auth). */
export interface SerializedTaskMessage extends Omit<EncodedMessage, 'body' | 'contentType' | 'contentEncoding'> {
  body: Buffer
  contentType: string
  contentEncoding: string
  /** [args, kwargs, embed], for before_task_publish receivers. */
  value: unknown[]
}

/** The body's third element when a task has no callbacks, errbacks, chain or chord: most sends. */
const NO_EMBED_JSON = '{"callbacks": null, "errbacks": null, "chain": null, "chord": null}'

/**
 * `origin`, when given, stands in for options.origin: a sender passes its
 * options through as they are instead of copying them to add it.
 */
export function encodeTaskV2With(
  name: string,
  options: Omit<TaskSendOptions, 'origin'> & { origin?: string },
  encoder: BodyEncoder,
  origin?: string,
): SerializedTaskMessage {
  const { value, headers, properties } = taskV2Parts(name, options, origin ?? options.origin)
  const embed = options.embed
  if (encoder.serializer === 'json' && (!embed || (!embed.callbacks && !embed.errbacks && !embed.chain && !embed.chord))) {
    // The same text as dumps(value), with the all-null embed written once for all.
    const text = `[${dumps(value[0])}, ${dumps(value[1])}, ${NO_EMBED_JSON}]`
    return { body: Buffer.from(text, 'utf8'), contentType: 'application/json', contentEncoding: 'utf-8', headers, properties, value }
  }
  const { body, contentType, contentEncoding } = encodeBody(value, encoder)
  return { body, contentType, contentEncoding, headers, properties, value }
}

function taskV2Parts(
  name: string,
  options: Omit<TaskSendOptions, 'origin'>,
  origin: string | undefined,
): { value: unknown[]; headers: Record<string, unknown>; properties: EncodedMessage['properties'] } {
  const id = options.id ?? uuid4()
  const args = options.args ?? []
  const kwargs = options.kwargs ?? {}
  // The clock is read only when a countdown or expiry needs it: most sends have neither.
  const now = options.countdown || options.expires !== undefined ? (options.now ?? new Date()).getTime() : 0

  let eta: string | null = null
  if (options.countdown) {
    checkSeconds(options.countdown, 'countdown')
    eta = formatIsoDate(new Date(now + options.countdown * 1000))
  } else if (options.eta !== undefined) {
    eta = typeof options.eta === 'string' ? options.eta : formatIsoDate(options.eta)
  }

  let expires: string | null = null
  let expiresInS: number | undefined
  const exp = options.expires
  if (typeof exp === 'number') {
    checkSeconds(exp, 'expires')
    expires = formatIsoDate(new Date(now + exp * 1000))
    expiresInS = exp
  } else if (exp instanceof Date) {
    expires = formatIsoDate(exp)
    expiresInS = (exp.getTime() - now) / 1000
  } else if (typeof exp === 'string') {
    expires = exp
    expiresInS = (parseIsoDate(exp).getTime() - now) / 1000
  }

  const headers: Record<string, unknown> = {
    lang: 'py',
    task: name,
    id,
    shadow: options.shadow ?? null,
    eta,
    expires,
    group: options.group ?? null,
    group_index: options.groupIndex ?? null,
    retries: options.retries ?? 0,
    timelimit: [options.timeLimit ?? null, options.softTimeLimit ?? null],
    root_id: options.rootId || id,
    parent_id: options.parentId ?? null,
    argsrepr: options.argsrepr ?? argsRepr(args),
    kwargsrepr: options.kwargsrepr ?? kwargsRepr(kwargs),
    origin,
    ignore_result: options.ignoreResult ?? false,
  }
  if (options.headers) Object.assign(headers, options.headers)

  const properties: EncodedMessage['properties'] = {
    correlationId: id,
    replyTo: options.replyTo ?? '',
    deliveryMode: 2,
    priority: options.priority ?? 0,
  }
  // kombu: str(int(expiration * 1000)); send_task clamps a past expiry to 0.
  if (expiresInS !== undefined) properties.expiration = String(Math.trunc(Math.max(0, expiresInS) * 1000))

  return { value: [args, kwargs, embedOf(options.embed)], headers, properties }
}

export interface TaskRequest {
  protocol: 1 | 2
  id: string
  task: string
  args: unknown[]
  kwargs: Record<string, unknown>
  embed: TaskEmbed
  eta: string | null
  expires: string | null
  retries: number
  /** [hard, soft] */
  timelimit: [number | null, number | null]
  rootId: string | null
  parentId: string | null
  group: string | null
  groupIndex: number | null
  argsrepr: string
  kwargsrepr: string
  origin: string | null
  shadow: string | null
  ignoreResult: boolean
  /** The effective header table (for v1/hybrid, built from the body as Celery does). */
  headers: Record<string, unknown>
}

export interface TaskMessageInput {
  headers: Record<string, unknown> | null | undefined
  body: Uint8Array | string
  contentType: string
  contentEncoding?: string
  /** accept_content and the certificate store; absent: JSON only, as Celery's default. */
  decoder?: BodyDecoder
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

const JSON_ONLY: BodyDecoder = { accept: new Set(['application/json']) }

function parseBody(input: TaskMessageInput): unknown {
  return decodeBody(input.body, input.contentType, input.contentEncoding, input.decoder ?? JSON_ONLY, 'task body')
}

const str = (h: Record<string, unknown>, key: string, what = key): string | null => {
  const v = h[key]
  if (v === undefined || v === null) return null
  if (typeof v !== 'string') throw new MalformedMessageError(`task ${what} must be a string, got ${dumps(v)}`)
  return v
}

function dateField(h: Record<string, unknown>, key: 'eta' | 'expires'): string | null {
  const v = h[key]
  if (v === undefined || v === null || v === '') return null
  if (typeof v !== 'string') throw new MalformedMessageError(`invalid ${key === 'eta' ? 'ETA' : 'expires'} value ${dumps(v)}: not a string`)
  try {
    parseIsoDate(v)
  } catch (cause) {
    throw new MalformedMessageError(
      `invalid ${key === 'eta' ? 'ETA' : 'expires'} value ${JSON.stringify(v)}: ${(cause as Error).message}`,
      { cause },
    )
  }
  return v
}

function limit(v: unknown): number | null {
  if (v === null || v === undefined) return null
  if (typeof v !== 'number') throw new MalformedMessageError(`task timelimit entries must be numbers or null, got ${dumps(v)}`)
  return v
}

function sigList(v: unknown, what: string): Signature[] | null {
  if (v === null || v === undefined) return null
  if (!Array.isArray(v) || !v.every(isPlainObject)) throw new MalformedMessageError(`task ${what} must be a list of signatures`)
  return v as unknown[] as Signature[]
}

function embedFrom(v: unknown): TaskEmbed {
  if (v === null || v === undefined) return embedOf(undefined)
  if (!isPlainObject(v)) throw new MalformedMessageError('task embed (third body element) must be an object or null')
  const chord = v.chord ?? null
  if (chord !== null && !isPlainObject(chord)) throw new MalformedMessageError('task chord must be a signature or null')
  return {
    callbacks: sigList(v.callbacks, 'callbacks'),
    errbacks: sigList(v.errbacks, 'errbacks'),
    chain: sigList(v.chain, 'chain'),
    chord: chord as Signature | null,
  }
}

function buildRequest(protocol: 1 | 2, h: Record<string, unknown>, args: unknown, kwargs: unknown, embed: TaskEmbed): TaskRequest {
  const id = h.id
  const task = h.task
  if (typeof id !== 'string' || id === '') throw new MalformedMessageError('task message has no id')
  if (typeof task !== 'string' || task === '') throw new MalformedMessageError(`task message ${id} has no task name`)
  if (!Array.isArray(args)) throw new MalformedMessageError(`task ${id}: args must be a list`)
  if (!isPlainObject(kwargs)) throw new MalformedMessageError(`task ${id}: kwargs must be a mapping`)
  const retries = h.retries ?? 0
  if (typeof retries !== 'number' || !Number.isInteger(retries)) throw new MalformedMessageError(`task ${id}: retries must be an integer`)
  const tl = h.timelimit
  let timelimit: [number | null, number | null] = [null, null]
  if (tl !== null && tl !== undefined) {
    if (!Array.isArray(tl) || tl.length !== 2) throw new MalformedMessageError(`task ${id}: timelimit must be [hard, soft]`)
    timelimit = [limit(tl[0]), limit(tl[1])]
  }
  const groupIndex = h.group_index ?? null
  if (groupIndex !== null && typeof groupIndex !== 'number') throw new MalformedMessageError(`task ${id}: group_index must be a number`)
  const argsrepr = str(h, 'argsrepr') ?? (protocol === 2 ? argsRepr(args) : saferepr(args))
  const kwargsrepr = str(h, 'kwargsrepr') ?? kwargsRepr(kwargs)
  return {
    protocol,
    id,
    task,
    args,
    kwargs,
    embed,
    eta: dateField(h, 'eta'),
    expires: dateField(h, 'expires'),
    retries,
    timelimit,
    rootId: str(h, 'root_id'),
    parentId: str(h, 'parent_id'),
    group: str(h, 'group'),
    groupIndex,
    argsrepr,
    kwargsrepr,
    origin: str(h, 'origin'),
    shadow: str(h, 'shadow'),
    ignoreResult: h.ignore_result === true,
    headers: h,
  }
}

// Celery's hybrid_to_proto2: header fields read from a dict body, then the
// message headers laid over them.
function fromDictBody(body: Record<string, unknown>, headers: Record<string, unknown>): TaskRequest {
  const h: Record<string, unknown> = {
    lang: body.lang ?? null,
    task: body.task ?? null,
    id: body.id ?? null,
    root_id: body.root_id ?? null,
    parent_id: body.parent_id ?? null,
    group: body.group ?? body.taskset ?? null,
    meth: body.meth ?? null,
    shadow: body.shadow ?? null,
    eta: body.eta ?? null,
    expires: body.expires ?? null,
    retries: body.retries ?? 0,
    timelimit: body.timelimit ?? [null, null],
    argsrepr: body.argsrepr ?? null,
    kwargsrepr: body.kwargsrepr ?? null,
    origin: body.origin ?? null,
  }
  Object.assign(h, headers)
  const embed = embedFrom({ callbacks: body.callbacks, errbacks: body.errbacks, chord: body.chord, chain: null })
  return buildRequest(1, h, body.args ?? [], body.kwargs ?? {}, embed)
}

/**
 * Decode a task message of protocol v2, v1 or hybrid (spec §1.6, §1.8).
 * Throws MalformedMessageError (or its UnsupportedContentTypeError) for
 * anything the worker must reject without requeue.
 */
export function decodeTaskMessage(input: TaskMessageInput): TaskRequest {
  const headers = input.headers ?? {}
  if (!isPlainObject(headers)) throw new MalformedMessageError('task message headers are not a mapping')
  // Before anything reads them: the headers are copied and walked (repr, IPC) below and later.
  checkValueLimits(headers, input.decoder?.limits ?? DEFAULT_MESSAGE_LIMITS, 'task headers')
  const body = parseBody(input)
  if ('task' in headers) {
    if (isPlainObject(body) && 'args' in body) return fromDictBody(body, headers)
    if (!Array.isArray(body) || body.length < 2 || body.length > 3) {
      throw new MalformedMessageError('protocol 2 task body must be [args, kwargs, embed]')
    }
    return buildRequest(2, { ...headers }, body[0], body[1], embedFrom(body[2]))
  }
  if (!isPlainObject(body) || !('task' in body)) {
    throw new MalformedMessageError('message is neither protocol 2 (no task header) nor protocol 1 (no task in body)')
  }
  return fromDictBody(body, headers)
}
