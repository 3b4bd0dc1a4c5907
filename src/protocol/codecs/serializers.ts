// kombu's serializer registry (kombu/serialization.py, 5.2.4) for task bodies
// and results: json, msgpack and yaml by name and content type, accept lists
// as Celery prepares them, and its refusal line. pickle is known by name so it
// can be refused by name; tsq never unpickles (unpickling runs code the sender
// chose). The `auth` envelope lives in auth.ts and is unwrapped by the caller.

import { createRequire } from 'node:module'
import type * as Msgpack from '@msgpack/msgpack'
import type * as Yaml from 'yaml'
import { EncodeError, MalformedMessageError, OverflowError, UnsupportedContentTypeError } from '../errors.js'
import { dumps, loads } from './kombu-json.js'
import {
  DEFAULT_MESSAGE_LIMITS,
  checkJsonDepth,
  checkValueLimits,
  checkYamlDepth,
  depthError,
  sizeError,
  type MessageLimits,
} from './limits.js'

// msgpack and YAML are loaded on first use: most apps never see either, and the two libraries
// are ~1.7 MB of heap in every process, pool child and thread that loads the protocol. A
// synchronous require keeps encode/decode synchronous. `require` exists in the CommonJS
// fast-path bundle and in the ESM bundle (its banner); plain ES modules build one (where
// import.meta.url is defined, unlike in the CommonJS bundle, hence the order).
const requireHere: NodeJS.Require = typeof require === 'function' ? require : createRequire(import.meta.url)
let msgpackLib: typeof Msgpack | undefined
let yamlLib: typeof Yaml | undefined
const msgpack = (): typeof Msgpack => (msgpackLib ??= requireHere('@msgpack/msgpack') as typeof Msgpack)
const yaml = (): typeof Yaml => (yamlLib ??= requireHere('yaml') as typeof Yaml)

export type SerializerName = 'json' | 'msgpack' | 'yaml' | 'pickle' | 'auth'

export interface SerializerSpec {
  name: SerializerName
  contentType: string
  contentEncoding: 'utf-8' | 'binary'
}

/** kombu's registrations: name, content type and content encoding. */
export const SERIALIZERS: Readonly<Record<SerializerName, SerializerSpec>> = {
  json: { name: 'json', contentType: 'application/json', contentEncoding: 'utf-8' },
  msgpack: { name: 'msgpack', contentType: 'application/x-msgpack', contentEncoding: 'binary' },
  yaml: { name: 'yaml', contentType: 'application/x-yaml', contentEncoding: 'utf-8' },
  pickle: { name: 'pickle', contentType: 'application/x-python-serialize', contentEncoding: 'binary' },
  auth: { name: 'auth', contentType: 'application/data', contentEncoding: 'utf-8' },
}

const BY_CONTENT_TYPE = new Map(Object.values(SERIALIZERS).map((s) => [s.contentType, s]))

/** kombu's TRUSTED_CONTENT: passes any accept list (the auth serializer's type is one). */
export const TRUSTED_CONTENT: ReadonlySet<string> = new Set(['application/data', 'application/text'])

export function serializerSpec(name: string): SerializerSpec {
  const spec = (SERIALIZERS as Record<string, SerializerSpec | undefined>)[name] ?? BY_CONTENT_TYPE.get(name)
  if (!spec) throw new UnknownSerializerError(name)
  return spec
}

export class UnknownSerializerError extends MalformedMessageError {
  override readonly code: string = 'UNKNOWN_SERIALIZER'
  constructor(name: string) {
    super(`No encoder installed for ${name} (tsq has json, msgpack, yaml and auth)`)
  }
}

/**
 * kombu's ContentDisallowed, with its words: `Refusing to deserialize
 * untrusted content of type json (application/json)`.
 */
export class ContentDisallowedError extends UnsupportedContentTypeError {
  override readonly code: string = 'CONTENT_DISALLOWED'
  constructor(contentType: string, message?: string) {
    super(contentType)
    const name = BY_CONTENT_TYPE.get(contentType)?.name
    this.message = message ?? `Refusing to deserialize untrusted content of type ${name ? `${name} (${contentType})` : contentType}`
  }
}

/** A pickle body: refused whatever accept_content says. */
export class PickleRefusedError extends ContentDisallowedError {
  override readonly code: string = 'PICKLE_REFUSED'
  constructor() {
    super(
      SERIALIZERS.pickle.contentType,
      'Refusing to deserialize pickle content (application/x-python-serialize): tsq never unpickles, because unpickling runs whatever code the sender put in the message',
    )
  }
}

/**
 * Celery's prepare_accept_content: names or content types, as content types.
 * null/undefined means Celery's default, ['json'].
 */
export function acceptContent(list: unknown, fallback: readonly string[] = ['json']): Set<string> {
  const items = Array.isArray(list) ? list : typeof list === 'string' ? [list] : fallback
  const out = new Set<string>()
  for (const item of items) {
    if (typeof item !== 'string') continue
    const spec = (SERIALIZERS as Record<string, SerializerSpec | undefined>)[item] ?? BY_CONTENT_TYPE.get(item)
    out.add(spec ? spec.contentType : item)
  }
  return out
}

export interface Serialized {
  contentType: string
  contentEncoding: string
  body: Buffer
}

// YAML 1.1 on both sides: PyYAML's safe_load resolves 1.1 scalars (yes/no,
// 0777, 1_000), so tsq writes and reads the same dialect.
const YAML_OPTIONS = { version: '1.1', intAsBigInt: true } as const

/** kombu's dumps(data, serializer=name) for json, msgpack and yaml. */
export function serialize(name: string, value: unknown): Serialized {
  const spec = serializerSpec(name)
  let body: Buffer
  try {
    switch (spec.name) {
      case 'json':
        body = Buffer.from(dumps(value), 'utf8')
        break
      case 'msgpack':
        // use_bin_type=True on the Python side: str as str, bytes as bin.
        body = Buffer.from(msgpack().encode(msgpackIntegers(value), { useBigInt64: true }))
        break
      case 'yaml':
        body = Buffer.from(yaml().stringify(yamlIntegers(value), YAML_OPTIONS), 'utf8')
        break
      default:
        throw new UnknownSerializerError(spec.name)
    }
  } catch (cause) {
    if (cause instanceof EncodeError || cause instanceof UnknownSerializerError) throw cause
    throw new EncodeError(cause)
  }
  return { contentType: spec.contentType, contentEncoding: spec.contentEncoding, body }
}

const INT64_MIN = -(2n ** 63n)
const UINT64_MAX = 2n ** 64n - 1n

/**
 * With useBigInt64 the encoder writes a number past 32 bits as a float and
 * every BigInt as 64 bits (wrapping one past them); Python's msgpack writes
 * each int in the fewest bytes and refuses one past 64 bits. So: integers
 * past 32 bits go as BigInt (uint64/int64, as Python), BigInts that fit a
 * double as numbers (the smallest width), and an int msgpack cannot hold
 * fails as Python's packb does, never wrapped. A copy: the caller's value is
 * not touched.
 */
function msgpackIntegers(v: unknown): unknown {
  if (typeof v === 'number') return Number.isInteger(v) && (v > 0xffffffff || v < -0x80000000) ? msgpackIntegers(BigInt(v)) : v
  if (typeof v === 'bigint') {
    if (v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER))
      return Number(v) > 0xffffffff || Number(v) < -0x80000000 ? v : Number(v)
    if (v < INT64_MIN || v > UINT64_MAX) throw new OverflowError('Integer value out of range')
    return v
  }
  if (Array.isArray(v)) return v.map(msgpackIntegers)
  if (v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    const out: Record<string, unknown> = {}
    for (const [k, x] of Object.entries(v)) out[k] = msgpackIntegers(x)
    return out
  }
  return v
}

/**
 * YAML writes a number past 2**53 as `1.1805916207174113e+21`, which PyYAML
 * reads as a float; an integral one is an int (as kombu's JSON writes it), so
 * it goes as a BigInt, digit for digit. A copy where anything changes.
 */
function yamlIntegers(v: unknown): unknown {
  if (typeof v === 'number') return Number.isInteger(v) && !Number.isSafeInteger(v) ? BigInt(v) : v
  if (Array.isArray(v)) return v.map(yamlIntegers)
  if (v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    const out: Record<string, unknown> = {}
    for (const [k, x] of Object.entries(v)) out[k] = yamlIntegers(x)
    return out
  }
  return v
}

/**
 * BigInts that fit a double become numbers again, so a small int is a number
 * whichever serializer carried it; past 2**53 they stay exact, as the JSON
 * path keeps them (msgpack's 64-bit and YAML's integers arrive as BigInt).
 */
function narrowIntegers(v: unknown): unknown {
  if (typeof v === 'bigint') return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = narrowIntegers(v[i])
    return v
  }
  if (v !== null && typeof v === 'object' && !(v instanceof Uint8Array) && !(v instanceof Date)) {
    const o = v as Record<string, unknown>
    for (const k of Object.keys(o)) o[k] = narrowIntegers(o[k])
    return o
  }
  return v
}

// One decoder for every body: decode() without { stream } keeps no state between calls, and
// constructing one per message was a visible share of a Redis worker's CPU per task.
const UTF8 = new TextDecoder('utf-8', { fatal: true })

function utf8(body: Uint8Array | string, what: string): string {
  if (typeof body === 'string') return body
  try {
    return UTF8.decode(body)
  } catch (cause) {
    throw new MalformedMessageError(`${what} is not valid UTF-8`, { cause })
  }
}

/**
 * kombu's loads for one content type tsq can read. `accept` null skips the
 * accept check (kombu's force=True, used for the body inside a verified auth
 * envelope); application/data is not handled here (see auth.ts). `limits`
 * are checked before the decoder, or anything after it, recurses (limits.ts).
 */
export function deserialize(
  body: Uint8Array | string,
  contentType: string,
  contentEncoding: string | undefined,
  accept: ReadonlySet<string> | null,
  what = 'body',
  limits: MessageLimits = DEFAULT_MESSAGE_LIMITS,
): unknown {
  const type = (contentType || 'application/data').trim().toLowerCase()
  if (type === SERIALIZERS.pickle.contentType) throw new PickleRefusedError()
  if (accept && !TRUSTED_CONTENT.has(type) && !accept.has(type)) throw new ContentDisallowedError(type)
  if (body.length > limits.maxBytes) throw sizeError(what, body.length, limits.maxBytes)
  switch (type) {
    case 'application/json': {
      const enc = (contentEncoding ?? 'utf-8').toLowerCase()
      if (enc !== 'utf-8' && enc !== 'utf8' && enc !== '')
        throw new MalformedMessageError(`content encoding ${JSON.stringify(contentEncoding)} is not supported for JSON`)
      const text = utf8(body, what)
      checkJsonDepth(text, limits.maxDepth, what)
      try {
        // A Python int past 2**53 (a 64-bit id) arrives as a BigInt, not rounded.
        return loads(text, { integers: 'exact' })
      } catch (cause) {
        throw new MalformedMessageError(`${what} is not valid JSON: ${(cause as Error).message}`, { cause })
      }
    }
    case 'application/x-msgpack':
      try {
        const raw = typeof body === 'string' ? Buffer.from(body, 'latin1') : body
        // A plain Uint8Array view, so bin values come out as Uint8Array whatever held the body.
        const bytes = new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength)
        // The decoder keeps its own stack; what walks the value after it recurses, so the value is checked first.
        const value = msgpack().decode(bytes, { useBigInt64: true })
        checkValueLimits(value, limits, what)
        return narrowIntegers(value)
      } catch (cause) {
        if (cause instanceof MalformedMessageError) throw cause
        throw new MalformedMessageError(`${what} is not valid msgpack: ${(cause as Error).message}`, { cause })
      }
    case 'application/x-yaml': {
      const text = utf8(body, what)
      checkYamlDepth(text, limits.maxDepth, what)
      try {
        const value: unknown = yaml().parse(text, YAML_OPTIONS)
        checkValueLimits(value, limits, what)
        return narrowIntegers(value)
      } catch (cause) {
        if (cause instanceof MalformedMessageError) throw cause
        // The library's recursion, should a shape the bound missed reach it.
        if (cause instanceof RangeError || /call stack/.test((cause as Error).message)) throw depthError(what, limits.maxDepth)
        throw new MalformedMessageError(`${what} is not valid YAML: ${(cause as Error).message.split('\n')[0]}`, { cause })
      }
    }
    default:
      throw new ContentDisallowedError(
        type,
        `content type ${JSON.stringify(type)} is not one tsq can decode (json, msgpack, yaml, and auth with security settings)`,
      )
  }
}
