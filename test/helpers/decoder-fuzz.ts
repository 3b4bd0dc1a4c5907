// Property-based fuzzing of the decoders a worker's admission uses (task
// messages through every serializer, the Redis envelope) and of the event and
// result decoders, the pickle reader, control messages, result codecs, beat
// entries and signed bodies: generated and mutated inputs either decode or throw the
// decoder's documented error, and what decodes can be handed to a pool slot
// (structured clone) and shown (repr, JSON) without overflowing. Shared by the
// unit test (fixed seed, few runs) and bench/fuzz.ts (many runs).
import { generateKeyPairSync } from 'node:crypto'
import fc from 'fast-check'
import { encode as msgpackEncode } from '@msgpack/msgpack'
import { stringify as yamlStringify } from 'yaml'
import {
  DEFAULT_MAX_DEPTH,
  MAX_PICKLE_DEPTH,
  PickleValueRefusedError,
  ProtocolError,
  PyTuple,
  acceptContent,
  argsRepr,
  decodeEvents,
  decodeResultMeta,
  decodeTaskMessage,
  dumps,
  dumpsPickle,
  kwargsRepr,
  loadsGroupPickle,
  loadsPickle,
  saferepr,
  valueLimitExceeded,
  loads,
  decodeControlRequest,
  decodeControlReply,
  decodeBody,
  signAndPack,
  checkJsonText,
  type TaskRequest,
  type CertStore,
  type Signer,
} from '../../src/protocol/index.js'
import { decodeStoredResult, type ResultCodec } from '../../src/backends/result-codec.js'
import { EntryError, decodeDefinition, decodeMeta } from '../../src/beat/entry.js'
import { pformat } from '../../src/protocol/codecs/pformat.js'
import pythonPickles from '../fixtures/python-pickles.json' with { type: 'json' }
import {
  MalformedEnvelopeError,
  encodeEnvelope,
  envelopeBody,
  envelopeProperties,
  parseEnvelope,
} from '../../src/transport/kombu-envelope.js'

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
    fc.oneof(
      fc.integer(),
      fc.double(),
      fc.boolean(),
      fc.constant(null),
      fc.string({ maxLength: 40 }),
      fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
    ),
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
  return {
    lang: 'py',
    task: 'proj.add',
    id,
    shadow: null,
    eta: null,
    expires: null,
    group: null,
    group_index: null,
    retries: 0,
    timelimit: [null, null],
    root_id: id,
    parent_id: null,
    argsrepr: '()',
    kwargsrepr: '{}',
    origin: 'fuzz@h',
    ignore_result: false,
    ...over,
  }
}

/** A header table: valid, with fields dropped or replaced, prototype keys, or a deep value. */
const headers: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.uuid().map((id) => v2Headers(id)) },
  fc
    .tuple(
      fc.uuid(),
      fc.constantFrom('id', 'task', 'retries', 'timelimit', 'eta', 'expires', 'group_index', 'argsrepr', ...PROTO_KEYS),
      fc.anything(),
    )
    .map(([id, k, v]) => {
      const h = v2Headers(id)
      Object.defineProperty(h, k, { value: v, enumerable: true, writable: true, configurable: true })
      return h
    }),
  fc.tuple(fc.uuid(), depth).map(([id, d]) => v2Headers(id, { custom: deepValue(d, 'list') })),
  fc.constant({}),
  fc.constantFrom(null, undefined, 'headers', 42, []),
  fc.dictionary(key, fc.anything(), { maxKeys: 6 }),
)

const v2Value = fc.tuple(
  fc.array(jsonish, { maxLength: 5 }),
  fc.dictionary(key, jsonish, { maxKeys: 4 }),
  fc.constantFrom<unknown>(EMBED, null, { callbacks: [{ task: 'x', args: [], kwargs: {}, options: {} }] }, { chord: 'nope' }),
)
const v1Value = fc.tuple(fc.uuid(), fc.array(jsonish, { maxLength: 4 })).map(([id, args]) => ({ task: 'proj.add', id, args, kwargs: {} }))

/** JSON text: valid bodies, deep ones (in args, kwargs, embed, v1), huge strings, and mutations of them. */
const jsonText: fc.Arbitrary<string> = fc.oneof(
  v2Value.map((v) => dumps(v)),
  v1Value.map((v) => dumps(v)),
  {
    weight: 4,
    arbitrary: fc.tuple(depth, fc.constantFrom('args', 'kwargs', 'embed', 'v1', 'bare', 'dict')).map(([d, where]) => {
      switch (where) {
        case 'args':
          return `[${nest('[', ']', d)}, {}, null]`
        case 'kwargs':
          return `[[], {"k": ${nest('[', ']', d)}}, null]`
        case 'embed':
          return `[[], {}, {"callbacks": [{"task": "x", "args": ${nest('[', ']', d)}}]}]`
        case 'v1':
          return `{"task": "proj.add", "id": "v1", "args": ${nest('[', ']', d)}}`
        case 'dict':
          return `[[${nest('{"a": ', '}', d, '1')}], {}, null]`
        default:
          return nest('[', ']', d)
      }
    }),
  },
  // Python's extra tokens and long integers take the slow parser.
  fc
    .tuple(depth, fc.constantFrom('NaN', 'Infinity', '123456789012345678901234'))
    .map(([d, token]) => `[[${token}, ${nest('[', ']', d)}], {}, null]`),
  fc.integer({ min: 0, max: 200_000 }).map((n) => `[["${'x'.repeat(n)}"], {}, null]`),
  fc.string({ maxLength: 200 }),
)

/** A text with bytes flipped, cut, or brackets and quotes inserted. */
const mutated = (text: fc.Arbitrary<string>): fc.Arbitrary<string> => fc.oneof(text, mutations(text))

const mutations = (text: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc
    .tuple(
      text,
      fc.array(fc.tuple(fc.nat(), fc.constantFrom('[', ']', '{', '}', '"', '\\', ',', ':', '\u0000', '\ud800', 'NaN', 'cut')), {
        maxLength: 4,
      }),
    )
    .map(([t, edits]) => {
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
  fc
    .oneof(
      v2Value,
      depth.map((d) => [deepValue(d, 'list'), {}, null]),
    )
    .map((v) => {
      try {
        return {
          body: msgpackEncode(v, { maxDepth: 200_000, useBigInt64: true }),
          contentType: 'application/x-msgpack',
          contentEncoding: 'binary',
        }
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
    const text =
      style === 'flow'
        ? nest('[', ']', d)
        : style === 'block'
          ? Array.from({ length: Math.min(d, 3000) }, (_, i) => `${' '.repeat(i)}-`).join('\n')
          : style === 'compact'
            ? `${'- '.repeat(d)}x`
            : `a: &a [1, 2]\nb: [*a, *a, *a]\nc: ${nest('[', ']', Math.min(d, 2000))}`
    return { body: utf8(text), contentType: 'application/x-yaml', contentEncoding: 'utf-8' }
  }),
  fc
    .tuple(
      fc.uint8Array({ maxLength: 300 }),
      fc.constantFrom(
        'application/json',
        'application/x-msgpack',
        'application/x-yaml',
        'application/x-python-serialize',
        'application/data',
        'text/plain',
        '',
      ),
      fc.constantFrom('utf-8', 'binary', '', 'latin-1', 'gzip'),
    )
    .map(([body, contentType, contentEncoding]) => ({ body, contentType, contentEncoding })),
  fc
    .tuple(mutated(jsonText), fc.string({ maxLength: 30 }), fc.string({ maxLength: 10 }))
    .map(([t, contentType, contentEncoding]) => ({ body: t, contentType, contentEncoding })),
)

export const taskMessages: fc.Arbitrary<FuzzInput> = fc.tuple(headers, bodyAndType).map(([h, b]) => ({ headers: h, ...b }))

/**
 * What the worker does with a decoded message before and while it runs it:
 * the pool channel's structured clone, the reprs for logs and events, the
 * inspect replies' JSON. None of it may overflow on what the decoder let in.
 */
function handOff(m: TaskRequest): void {
  if (valueLimitExceeded([m.args, m.kwargs, m.embed, m.headers], DEFAULT_MAX_DEPTH + 2) !== null)
    throw new Error(`decoded message of ${m.id} is past the depth limit`)
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
    m = decodeTaskMessage({
      headers: input.headers as Record<string, unknown>,
      body: input.body,
      contentType: input.contentType,
      contentEncoding: input.contentEncoding,
      decoder: { accept: ACCEPT },
    })
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
      const text = encodeEnvelope('', 'celery', {
        body,
        properties: {
          contentType: m.contentType,
          contentEncoding: m.contentEncoding,
          headers: headers ?? {},
          deliveryMode: 2,
          priority: 0,
        },
      })
      return ok ? text : text.slice(0, Math.max(1, text.length - 7))
    } catch {
      return '{}'
    }
  }),
  mutated(
    fc.constant(
      '{"body": "W10=", "content-type": "application/json", "headers": {"task": "x", "id": "y"}, "properties": {"body_encoding": "base64", "delivery_tag": "t", "delivery_info": {}}}',
    ),
  ),
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
    fc
      .tuple(fc.uuid(), jsonish)
      .map(([id, v]) => dumps({ type: 'task-received', uuid: id, args: v, hostname: 'w@h', timestamp: 1, clock: 1 })),
    fc
      .tuple(fc.uuid(), jsonish)
      .map(([id, v]) => dumps({ status: 'SUCCESS', result: v, traceback: null, children: [], date_done: null, task_id: id })),
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

// ---- pickles (the SQL backends' result column) ------------------------------

const op = (code: number, ...payload: number[]): number[] => [code, ...payload]
const le = (n: number | bigint, size: 4 | 8): number[] => {
  const b = Buffer.alloc(size)
  if (size === 4) b.writeUInt32LE(Number(n) >>> 0)
  else b.writeBigUInt64LE(BigInt(n))
  return [...b]
}
const ascii = (s: string): number[] => [...Buffer.from(s, 'latin1')]

/** One opcode with plausible arguments, from every protocol 0-5 plus a few the reader refuses. */
const opcode: fc.Arbitrary<number[]> = fc.oneof(
  fc
    .constantFrom(
      0x28,
      0x30,
      0x31,
      0x32,
      0x4e,
      0x88,
      0x89,
      0x5d,
      0x6c,
      0x61,
      0x65,
      0x29,
      0x85,
      0x86,
      0x87,
      0x74,
      0x7d,
      0x64,
      0x73,
      0x75,
      0x94,
      0x2e,
      0x52,
      0x93,
      0x81,
      0x62,
      0x97,
      0x98,
    )
    .map((c) => [c]),
  fc.nat({ max: 255 }).map((b) => op(0x4b, b)),
  fc.nat({ max: 65535 }).map((n) => op(0x4d, n & 0xff, n >> 8)),
  fc.integer().map((n) => op(0x4a, ...le(n, 4))),
  fc.uint8Array({ maxLength: 12 }).map((b) => op(0x8a, b.length, ...b)),
  fc.oneof(fc.nat({ max: 40 }), fc.constantFrom(0x7fffffff, 0x40000, 0x40001)).map((n) => op(0x8b, ...le(n, 4))),
  fc.constantFrom('0', '01', '00', '-17', '12345678901234567890', 'x', '9'.repeat(4301)).map((t) => op(0x49, ...ascii(`${t}\n`))),
  fc.constantFrom('5L', '-99999999999999999999L', 'L', '1'.repeat(5000)).map((t) => op(0x4c, ...ascii(`${t}\n`))),
  fc.constantFrom('1.5', 'nan', 'inf', '-0.0', '2', 'x').map((t) => op(0x46, ...ascii(`${t}\n`))),
  fc.double().map((x) => {
    const b = Buffer.alloc(8)
    b.writeDoubleBE(x)
    return op(0x47, ...b)
  }),
  fc.string({ maxLength: 8 }).map((t) => {
    const b = Buffer.from(t)
    return op(0x8c, b.length, ...b)
  }),
  fc.uint8Array({ maxLength: 8 }).map((b) => op(0x8c, b.length, ...b)), // not always UTF-8
  fc.string({ maxLength: 8 }).map((t) => {
    const b = Buffer.from(t)
    return op(0x58, ...le(b.length, 4), ...b)
  }),
  fc.constantFrom('abc', '\\u00e9', '\\U0001f600', '\\Uffffffff', '\\ud800').map((t) => op(0x56, ...ascii(`${t}\n`))),
  fc.uint8Array({ maxLength: 8 }).map((b) => op(0x43, b.length, ...b)),
  fc.uint8Array({ maxLength: 8 }).map((b) => op(0x55, b.length, ...b)),
  // Lengths far past the data: refused as truncated, never allocated.
  fc.constantFrom(0x8d, 0x8e, 0x96).chain((c) => fc.constantFrom(2n ** 63n, 2n ** 64n - 1n, 2n ** 40n, 3n).map((n) => op(c, ...le(n, 8)))),
  fc.constantFrom(0x58, 0x42, 0x54).map((c) => op(c, ...le(0xffffffff, 4))),
  fc.nat({ max: 6 }).map((n) => op(0x80, n)),
  fc.nat({ max: 1 << 20 }).map((n) => op(0x95, ...le(n, 8))),
  fc.nat({ max: 4 }).map((k) => op(0x71, k)),
  fc.nat({ max: 4 }).map((k) => op(0x68, k)),
  fc.nat({ max: 4 }).map((k) => op(0x72, ...le(k, 4))),
  fc.nat({ max: 4 }).map((k) => op(0x6a, ...le(k, 4))),
  fc.constantFrom('0', '1', 'x', '').chain((k) => fc.constantFrom(0x70, 0x67).map((c) => op(c, ...ascii(`${k}\n`)))),
  fc
    .constantFrom(['builtins', 'eval'], ['celery.result', 'AsyncResult'], ['os', 'system'])
    .map(([m, n]) => op(0x63, ...ascii(`${m}\n${n}\n`))),
)

/** `x = []; for _ in range(levels): x = [x, x]` as protocol 5 writes it: each list once, then memo references (BINGET or LONG_BINGET). */
function referenceBomb(levels: number, long: boolean): Buffer {
  const body: number[] = []
  for (let i = 0; i < levels; i++) body.push(0x5d, 0x94, 0x28)
  body.push(0x5d, 0x94)
  for (let k = levels; k >= 1; k--) body.push(...(long ? op(0x6a, ...le(k, 4)) : op(0x68, k)), 0x65)
  body.push(0x2e)
  return Buffer.from([0x80, 5, 0x95, ...le(body.length, 8), ...body])
}

/** A list nested `d` levels, each level memoized, in either list spelling. */
function nestedPickle(d: number, style: 'append' | 'mark' | 'dict' | 'tuple'): Buffer {
  const open = { append: [0x5d, 0x94], mark: [0x28], dict: [0x7d, 0x94, 0x8c, 1, 0x6b], tuple: [0x28] }[style]
  const close = { append: [0x61], mark: [0x6c], dict: [0x73], tuple: [0x74] }[style]
  const parts: number[] = [0x80, 4]
  for (let i = 0; i < d; i++) parts.push(...open)
  parts.push(0x4e)
  for (let i = 0; i < d; i++) parts.push(...close)
  parts.push(0x2e)
  return Buffer.from(parts)
}

const pythonPickle = fc.constantFrom(
  ...[0, 1, 2, 3, 4, 5].map((p) => Buffer.from((pythonPickles as Record<string, string>)[String(p)]!, 'hex')),
)

/** Pickles: Python's own, tsq's own, opcode soup, reference bombs, deep nesting, and all of them cut and flipped. */
const pickleBytes: fc.Arbitrary<Uint8Array> = fc.oneof(
  { weight: 9, arbitrary: pythonPickle },
  {
    weight: 6,
    arbitrary: fc
      .oneof(
        jsonish,
        fc.array(jsonish, { maxLength: 4 }).map((a) => new PyTuple(a)),
      )
      .map((v) => {
        try {
          return dumpsPickle(v)
        } catch {
          return Buffer.from([0x4e, 0x2e])
        }
      }),
  },
  {
    weight: 12,
    arbitrary: fc
      .tuple(fc.constantFrom<number[]>([], [0x80, 2], [0x80, 5, 0x95, ...le(0, 8)]), fc.array(opcode, { maxLength: 30 }), fc.boolean())
      .map(([head, ops, stop]) => Buffer.from([...head, ...ops.flat(), ...(stop ? [0x2e] : [])])),
  },
  { weight: 4, arbitrary: fc.tuple(fc.integer({ min: 1, max: 40 }), fc.boolean()).map(([levels, long]) => referenceBomb(levels, long)) },
  {
    weight: 4,
    arbitrary: fc
      .tuple(
        fc.oneof(fc.integer({ min: MAX_PICKLE_DEPTH - 3, max: MAX_PICKLE_DEPTH + 3 }), fc.integer({ min: 0, max: 50 }), fc.constant(5000)),
        fc.constantFrom<'append' | 'mark' | 'dict' | 'tuple'>('append', 'mark', 'dict', 'tuple'),
      )
      .map(([d, style]) => nestedPickle(d, style)),
  },
  // A MARK run longer than a call's argument list may be (rarely: a list this long takes a while to write out).
  {
    weight: 1,
    arbitrary: fc
      .constant(150_000)
      .map((n) => Buffer.concat([Buffer.from([0x5d, 0x28]), Buffer.alloc(n, 0x4e), Buffer.from([0x65, 0x2e])])),
  },
)

/** A byte string with bytes cut, flipped or inserted. */
const mutatedBytes = (bytes: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array> =>
  fc.oneof(
    bytes,
    fc
      .tuple(
        bytes,
        fc.array(fc.tuple(fc.nat(), fc.nat({ max: 255 }), fc.constantFrom('flip', 'insert', 'cut')), { minLength: 1, maxLength: 4 }),
      )
      .map(([b, edits]) => {
        let out = Buffer.from(b)
        for (const [at, byte, what] of edits) {
          const i = out.length === 0 ? 0 : at % out.length
          if (what === 'cut') out = out.subarray(0, i)
          else if (what === 'insert') out = Buffer.concat([out.subarray(0, i), Buffer.from([byte]), out.subarray(i)])
          else if (out.length) out[i] = byte
        }
        return out
      }),
  )

export const pickles: fc.Arbitrary<Uint8Array> = mutatedBytes(pickleBytes)

/** A result column through the SQL backends' readers: a plain value the result can carry, or a refusal. */
export function checkPickle(data: Uint8Array): void {
  let v: unknown
  try {
    v = loadsPickle(data)
  } catch (error) {
    if (!(error instanceof PickleValueRefusedError) || error.message.includes('\n')) throw error
    v = undefined
  }
  if (v !== undefined) {
    // A tuple is two levels here (the PyTuple and its items).
    if (valueLimitExceeded(v, 2 * MAX_PICKLE_DEPTH + 2) !== null) throw new Error('a read pickle is past the depth limit')
    structuredClone(v)
    saferepr(v)
    try {
      dumps({ result: v })
    } catch (error) {
      if (!(error instanceof ProtocolError) || /call stack/.test(error.message)) throw error
    }
  }
  try {
    loadsGroupPickle(data)
  } catch (error) {
    if (!(error instanceof PickleValueRefusedError) || error.message.includes('\n')) throw error
  }
}

// ---- the other doors: kombu JSON, control messages, result codecs, beat entries, signed bodies ----

/** Any JSON-ish text a peer could send to a door: the generated and deep texts above, and shapes of each door's own. */
export const doorTexts: fc.Arbitrary<string> = mutated(
  fc.oneof(
    jsonText,
    eventOrResultTexts,
    fc
      .tuple(fc.string({ maxLength: 12 }), jsonish, fc.option(fc.array(fc.string({ maxLength: 8 }), { maxLength: 3 })))
      .map(([method, args, destination]) =>
        dumps({
          method,
          arguments: { x: args },
          destination,
          pattern: null,
          matcher: null,
          ticket: 't',
          reply_to: { exchange: 'reply.celery.pidbox', routing_key: 'k' },
        }),
      ),
    fc.tuple(fc.string({ maxLength: 12 }), jsonish).map(([node, reply]) => dumps({ [node]: reply })),
    fc
      .tuple(
        fc.string({ maxLength: 12 }),
        jsonish,
        fc.constantFrom<unknown>({ __type__: 'interval', every: 5 }, { __type__: 'crontab', minute: '*' }, 5, 'x', null),
      )
      .map(([name, args, schedule]) => dumps({ name, task: 'proj.add', args: [args], kwargs: {}, options: {}, schedule, enabled: true })),
    fc
      .tuple(
        fc.oneof(fc.integer(), fc.string({ maxLength: 4 }), fc.constant(null)),
        fc.oneof(fc.constant(0), fc.string({ maxLength: 12 }), fc.double()),
      )
      .map(([year, timezone]) =>
        dumps({
          last_run_at: { __type__: 'datetime', year, month: 13, day: 40, hour: 25, minute: 61, second: 61, microsecond: 'x', timezone },
          total_run_count: year,
        }),
      ),
    depth.map((d) => `{"__proto__": {"method": "ping"}, "x": ${nest('[', ']', d)}}`),
    fc.integer({ min: 0, max: 100_000 }).map((n) => `${'{"a":'.repeat(Math.min(n, 30_000))}1${'}'.repeat(Math.min(n, 30_000))}`),
  ),
)

/** Shown as the CLI and the dashboard show what a door let in. */
function shown(v: unknown): void {
  structuredClone(v)
  saferepr(v)
  pformat(v)
  try {
    dumps(v)
  } catch (error) {
    if (!(error instanceof ProtocolError) || /call stack/.test(error.message)) throw error
  }
}

const documented = (error: unknown): boolean =>
  (error instanceof ProtocolError || error instanceof EntryError) && !/call stack|\n/i.test(error.message)

/** kombu JSON, control requests and replies, result metas (JSON codec), beat definitions and metas: a value that can be shown, or the door's own error. */
export function checkDoorText(text: string): void {
  const doors: Array<(t: string) => unknown> = [
    (t) => {
      try {
        // kombu's loads has no limits of its own: every caller checks the text first.
        checkJsonText(t, 'text')
        return loads(t)
      } catch (error) {
        if (error instanceof SyntaxError || error instanceof ProtocolError) return null
        throw error
      }
    },
    decodeControlRequest,
    decodeControlReply,
    (t) => decodeStoredResult(t),
    decodeDefinition,
    decodeMeta,
  ]
  for (const door of doors) {
    let v: unknown
    try {
      v = door(text)
    } catch (error) {
      if (documented(error)) continue
      throw error
    }
    shown(v)
  }
}

const CODECS: ResultCodec[] = [
  { serializer: 'json', accept: new Set(['application/json']) },
  { serializer: 'msgpack', accept: new Set(['application/x-msgpack', 'application/json']) },
  { serializer: 'yaml', accept: new Set(['application/x-yaml']) },
]

/** A result body through each backend codec (the Redis value, the rpc reply, the Django row), and a body through the generic body decoder. */
export function checkResultBody(input: FuzzInput): void {
  // One codec per input (each codec still sees every kind of body over a run), read as the store has it and as a message says it.
  const codec = CODECS[input.body.length % CODECS.length]!
  {
    for (const type of [undefined, input.contentType]) {
      try {
        shown(decodeStoredResult(input.body, codec, type, input.contentEncoding))
      } catch (error) {
        if (!documented(error)) throw error
      }
    }
  }
}

/** One RSA key standing for a certificate in the store; made once per process. */
let signing: { signer: Signer; store: CertStore } | undefined
function signingKit(): { signer: Signer; store: CertStore } {
  if (signing) return signing
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 })
  const cert = { id: 'CN=fuzz 1', publicKey, signatureBytes: 128, notAfter: new Date(Date.UTC(2999, 0, 1)) }
  signing = {
    signer: { key: privateKey, id: cert.id, digest: 'sha256' },
    store: { get: (id: string) => (id === cert.id ? cert : undefined) },
  }
  return signing
}

/** Signed bodies (application/data): signed task bodies, cut, flipped and padded; a body or SecurityError / the inner decoder's error. */
export const signedBodies: fc.Arbitrary<string> = mutated(
  fc.oneof(
    bodyAndType.map((b) => {
      const body = typeof b.body === 'string' ? Buffer.from(b.body, 'utf8') : Buffer.from(b.body)
      return signAndPack(signingKit().signer, { contentType: b.contentType, contentEncoding: b.contentEncoding, body })
    }),
    fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('base64')),
    fc.constant('Q049ZnV6eiAxAAEAAQ=='),
  ),
)

export function checkSigned(payload: string): void {
  let v: unknown
  try {
    v = decodeBody(payload, 'application/data', 'binary', { accept: ACCEPT, verify: { store: signingKit().store, digest: 'sha256' } })
  } catch (error) {
    if (documented(error)) return
    throw error
  }
  shown(v)
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
  fc.assert(fc.property(pickles, checkPickle), { seed, numRuns })
  fc.assert(fc.property(doorTexts, checkDoorText), { seed, numRuns })
  fc.assert(fc.property(taskMessages, checkResultBody), { seed, numRuns: Math.ceil(numRuns / 2) })
  fc.assert(fc.property(signedBodies, checkSigned), { seed, numRuns: Math.ceil(numRuns / 3) })
}
