// Property-based fuzzing of the decoders a worker's admission uses (task
// messages through every serializer, the Redis envelope) and of the event and
// result decoders: generated and mutated inputs either decode or throw the
// decoder's documented error, and what decodes can be handed to a pool slot
// (structured clone) and shown (repr, JSON) without overflowing. Shared by the
// unit test (fixed seed, few runs) and bench/fuzz.ts (many runs).
import fc from 'fast-check'
import { encode as msgpackEncode } from '@msgpack/msgpack'
import { stringify as yamlStringify } from 'yaml'
import {
  DEFAULT_MAX_DEPTH, ProtocolError, acceptContent, argsRepr, decodeEvents, decodeResultMeta, decodeTaskMessage, dumps, kwargsRepr, saferepr, valueLimitExceeded,
  type TaskRequest,
} from '../../src/protocol/index.js'
import { MalformedEnvelopeError, encodeEnvelope, envelopeBody, envelopeProperties, parseEnvelope } from '../../src/transport/kombu-envelope.js'

const ACCEPT = acceptContent(['json', 'msgpack', 'yaml'])
const EMBED = { callbacks: null, errbacks: null, chain: null, chord: null }
const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf']

export interface FuzzInput {
  headers: unknown
  body: Uint8Array | string
  contentType: string
  contentEncoding: string
}

const nest = (open: string, close: string, depth: number, inner = ''): string => `${open.repeat(depth)}${inner}${close.repeat(depth)}`

/** Depths around the limit most of the time, far past it sometimes. */
const depth = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 40 }) },
  { weight: 3, arbitrary: fc.integer({ min: DEFAULT_MAX_DEPTH - 3, max: DEFAULT_MAX_DEPTH + 3 }) },
  { weight: 2, arbitrary: fc.integer({ min: 1000, max: 8000 }) },
  { weight: 1, arbitrary: fc.constantFrom(20_000, 100_000) },
)

const key = fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom(...PROTO_KEYS))
const jsonish: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.string({ maxLength: 40 }), fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n })),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(key, tie('value'), { maxKeys: 4 }),
  ),
})).value

function deepValue(d: number, kind: 'list' | 'dict'): unknown {
  let v: unknown = kind === 'list' ? [] : {}
  for (let i = 1; i < d; i++) v = kind === 'list' ? [v] : { k: v }
  return v
}

function v2Headers(id: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { lang: 'py', task: 'proj.add', id, shadow: null, eta: null, expires: null, group: null, group_index: null, retries: 0, timelimit: [null, null], root_id: id, parent_id: null, argsrepr: '()', kwargsrepr: '{}', origin: 'fuzz@h', ignore_result: false, ...over }
}

/** A header table: valid, with fields dropped or replaced, prototype keys, or a deep value. */
const headers: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.uuid().map((id) => v2Headers(id)) },
  fc.tuple(fc.uuid(), fc.constantFrom('id', 'task', 'retries', 'timelimit', 'eta', 'expires', 'group_index', 'argsrepr', ...PROTO_KEYS), fc.anything()).map(([id, k, v]) => {
    const h = v2Headers(id)
    Object.defineProperty(h, k, { value: v, enumerable: true, writable: true, configurable: true })
    return h
  }),
  fc.tuple(fc.uuid(), depth).map(([id, d]) => v2Headers(id, { custom: deepValue(d, 'list') })),
  fc.constant({}),
  fc.constantFrom(null, undefined, 'headers', 42, []),
  fc.dictionary(key, fc.anything(), { maxKeys: 6 }),
)

const v2Value = fc.tuple(fc.array(jsonish, { maxLength: 5 }), fc.dictionary(key, jsonish, { maxKeys: 4 }), fc.constantFrom<unknown>(EMBED, null, { callbacks: [{ task: 'x', args: [], kwargs: {}, options: {} }] }, { chord: 'nope' }))
const v1Value = fc.tuple(fc.uuid(), fc.array(jsonish, { maxLength: 4 })).map(([id, args]) => ({ task: 'proj.add', id, args, kwargs: {} }))

/** JSON text: valid bodies, deep ones (in args, kwargs, embed, v1), huge strings, and mutations of them. */
const jsonText: fc.Arbitrary<string> = fc.oneof(
  v2Value.map((v) => dumps(v)),
  v1Value.map((v) => dumps(v)),
  { weight: 4, arbitrary: fc.tuple(depth, fc.constantFrom('args', 'kwargs', 'embed', 'v1', 'bare', 'dict')).map(([d, where]) => {
    switch (where) {
      case 'args': return `[${nest('[', ']', d)}, {}, null]`
      case 'kwargs': return `[[], {"k": ${nest('[', ']', d)}}, null]`
      case 'embed': return `[[], {}, {"callbacks": [{"task": "x", "args": ${nest('[', ']', d)}}]}]`
      case 'v1': return `{"task": "proj.add", "id": "v1", "args": ${nest('[', ']', d)}}`
      case 'dict': return `[[${nest('{"a": ', '}', d, '1')}], {}, null]`
      default: return nest('[', ']', d)
    }
  }) },
  // Python's extra tokens and long integers take the slow parser.
  fc.tuple(depth, fc.constantFrom('NaN', 'Infinity', '123456789012345678901234')).map(([d, token]) => `[[${token}, ${nest('[', ']', d)}], {}, null]`),
  fc.integer({ min: 0, max: 200_000 }).map((n) => `[["${'x'.repeat(n)}"], {}, null]`),
  fc.string({ maxLength: 200 }),
)

/** A text with bytes flipped, cut, or brackets and quotes inserted. */
const mutated = (text: fc.Arbitrary<string>): fc.Arbitrary<string> => fc.oneof(text, mutations(text))

const mutations = (text: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.tuple(text, fc.array(fc.tuple(fc.nat(), fc.constantFrom('[', ']', '{', '}', '"', '\\', ',', ':', '\u0000', '\ud800', 'NaN', 'cut')), { maxLength: 4 })).map(([t, edits]) => {
    let s = t
    for (const [at, what] of edits) {
      const i = s.length === 0 ? 0 : at % s.length
      s = what === 'cut' ? s.slice(0, i) : s.slice(0, i) + what + s.slice(i)
    }
    return s
  })

const utf8 = (s: string): Uint8Array => Buffer.from(s, 'utf8')

/** A body and the content type and encoding it claims (not always the right ones). */
const bodyAndType: fc.Arbitrary<Pick<FuzzInput, 'body' | 'contentType' | 'contentEncoding'>> = fc.oneof(
  { weight: 4, arbitrary: mutated(jsonText).map((t) => ({ body: utf8(t), contentType: 'application/json', contentEncoding: 'utf-8' })) },
  fc.oneof(v2Value, depth.map((d) => [deepValue(d, 'list'), {}, null])).map((v) => {
    try {
      return { body: msgpackEncode(v, { maxDepth: 200_000, useBigInt64: true }), contentType: 'application/x-msgpack', contentEncoding: 'binary' }
    } catch {
      return { body: new Uint8Array([0x93, 0x90, 0x80, 0xc0]), contentType: 'application/x-msgpack', contentEncoding: 'binary' }
    }
  }),
  fc.tuple(depth, fc.nat({ max: 255 })).map(([d, b]) => {
    // Raw msgpack: fixarray-of-one runs, then a random byte.
    const bytes = new Uint8Array(d + 1).fill(0x91)
    bytes[d] = b
    return { body: bytes, contentType: 'application/x-msgpack', contentEncoding: 'binary' }
  }),
  v2Value.map((v) => ({ body: utf8(yamlStringify(v, { version: '1.1' })), contentType: 'application/x-yaml', contentEncoding: 'utf-8' })),
  fc.tuple(depth, fc.constantFrom('flow', 'block', 'compact', 'alias')).map(([d, style]) => {
    const text = style === 'flow' ? nest('[', ']', d) : style === 'block' ? Array.from({ length: Math.min(d, 3000) }, (_, i) => `${' '.repeat(i)}-`).join('\n') : style === 'compact' ? `${'- '.repeat(d)}x` : `a: &a [1, 2]\nb: [*a, *a, *a]\nc: ${nest('[', ']', Math.min(d, 2000))}`
    return { body: utf8(text), contentType: 'application/x-yaml', contentEncoding: 'utf-8' }
  }),
  fc.tuple(fc.uint8Array({ maxLength: 300 }), fc.constantFrom('application/json', 'application/x-msgpack', 'application/x-yaml', 'application/x-python-serialize', 'application/data', 'text/plain', ''), fc.constantFrom('utf-8', 'binary', '', 'latin-1', 'gzip')).map(([body, contentType, contentEncoding]) => ({ body, contentType, contentEncoding })),
  fc.tuple(mutated(jsonText), fc.string({ maxLength: 30 }), fc.string({ maxLength: 10 })).map(([t, contentType, contentEncoding]) => ({ body: t, contentType, contentEncoding })),
)

export const taskMessages: fc.Arbitrary<FuzzInput> = fc.tuple(headers, bodyAndType).map(([h, b]) => ({ headers: h, ...b }))

/**
 * What the worker does with a decoded message before and while it runs it:
 * the pool channel's structured clone, the reprs for logs and events, the
 * inspect replies' JSON. None of it may overflow on what the decoder let in.
 */
function handOff(m: TaskRequest): void {
  if (valueLimitExceeded([m.args, m.kwargs, m.embed, m.headers], DEFAULT_MAX_DEPTH + 2) !== null) throw new Error(`decoded message of ${m.id} is past the depth limit`)
  structuredClone({ type: 'packed-jobs', keys: ['args', 'kwargs', 'headers'], values: [m.args, m.kwargs, m.headers] })
  argsRepr(m.args)
  kwargsRepr(m.kwargs)
  saferepr(m.embed)
  try {
    dumps({ node: [{ id: m.id, args: m.args, kwargs: m.kwargs }] })
  } catch (error) {
    // kombu's JSON refuses bytes (a msgpack bin value): an EncodeError, never a stack overflow.
    if (!(error instanceof ProtocolError) || /call stack/.test(error.message)) throw error
  }
}

/** One task message through the worker's decoder: a request it can hand off, or a ProtocolError. */
export function checkTaskMessage(input: FuzzInput): void {
  let m: TaskRequest
  try {
    m = decodeTaskMessage({ headers: input.headers as Record<string, unknown>, body: input.body, contentType: input.contentType, contentEncoding: input.contentEncoding, decoder: { accept: ACCEPT } })
  } catch (error) {
    if (error instanceof ProtocolError && !/call stack/i.test(error.message)) return
    throw error
  }
  handOff(m)
}

/** The same message as a Redis envelope, mutated: an envelope or MalformedEnvelopeError, then the task decoder's rule. */
export const envelopes: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(taskMessages, fc.boolean()).map(([m, ok]) => {
    const body = Buffer.from(typeof m.body === 'string' ? Buffer.from(m.body, 'utf8') : m.body)
    const headers = m.headers && typeof m.headers === 'object' && !Array.isArray(m.headers) ? (m.headers as never) : undefined
    try {
      const text = encodeEnvelope('', 'celery', { body, properties: { contentType: m.contentType, contentEncoding: m.contentEncoding, headers: headers ?? {}, deliveryMode: 2, priority: 0 } })
      return ok ? text : text.slice(0, Math.max(1, text.length - 7))
    } catch {
      return '{}'
    }
  }),
  mutated(fc.constant('{"body": "W10=", "content-type": "application/json", "headers": {"task": "x", "id": "y"}, "properties": {"body_encoding": "base64", "delivery_tag": "t", "delivery_info": {}}}')),
  depth.map((d) => `{"body": "", "headers": {"x": ${nest('[', ']', d)}}, "properties": {"n": NaN}}`),
)

export function checkEnvelope(raw: string): void {
  let env
  try {
    env = parseEnvelope(raw)
  } catch (error) {
    if (error instanceof MalformedEnvelopeError) return
    throw error
  }
  let body: Buffer
  let props
  try {
    body = envelopeBody(env)
    props = envelopeProperties(env)
  } catch (error) {
    // A body that is neither text nor base64 (an object kombu wrote raw) is dumped again: its EncodeError is documented.
    if (error instanceof ProtocolError && !/call stack/i.test(error.message)) return
    throw error
  }
  checkTaskMessage({ headers: props.headers, body, contentType: props.contentType, contentEncoding: props.contentEncoding ?? '' })
}

/** Event and result bodies: decoded, or MalformedMessageError. */
export const eventOrResultTexts: fc.Arbitrary<string> = mutated(
  fc.oneof(
    fc.tuple(fc.uuid(), jsonish).map(([id, v]) => dumps({ type: 'task-received', uuid: id, args: v, hostname: 'w@h', timestamp: 1, clock: 1 })),
    fc.tuple(fc.uuid(), jsonish).map(([id, v]) => dumps({ status: 'SUCCESS', result: v, traceback: null, children: [], date_done: null, task_id: id })),
    depth.map((d) => `{"type": "task-received", "status": "SUCCESS", "args": ${nest('[', ']', d)}}`),
    depth.map((d) => `[{"type": "x"}, ${nest('{"a": ', '}', d, 'NaN')}]`),
  ),
)

export function checkEventOrResult(text: string): void {
  for (const decode of [decodeEvents, decodeResultMeta] as Array<(t: string) => unknown>) {
    try {
      decode(text)
    } catch (error) {
      if (error instanceof ProtocolError && !/call stack/i.test(error.message)) continue
      throw error
    }
  }
}

export interface FuzzRun {
  seed: number
  numRuns: number
}

/** Every property once, with one seed and run count (the unit test's, or the bench's). */
export function fuzzDecoders({ seed, numRuns }: FuzzRun): void {
  fc.assert(fc.property(taskMessages, checkTaskMessage), { seed, numRuns })
  fc.assert(fc.property(envelopes, checkEnvelope), { seed, numRuns })
  fc.assert(fc.property(eventOrResultTexts, checkEventOrResult), { seed, numRuns })
}
