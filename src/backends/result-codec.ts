// result_serializer and result_accept_content for the stores that keep or
// carry results (Redis keys, rpc reply messages): the worker writes the meta
// in the configured serializer, a reader decodes it in its own configured one
// (as Celery's backends do: the Redis value carries no content type).
import {
  decodeBody,
  decodeResultMeta,
  loads,
  resultMetaFrom,
  serialize,
  serializerSpec,
  type ResultMeta,
  type Serialized,
} from '../protocol/index.js'

export interface ResultCodec {
  serializer: string
  /** result_accept_content, as content types. */
  accept: ReadonlySet<string>
}

export const JSON_RESULTS: ResultCodec = { serializer: 'json', accept: new Set(['application/json']) }

/** The meta as the runner encoded it (kombu JSON text, or bytes already in the codec's serializer), in the configured serializer. */
export function encodeStoredResult(meta: string | Uint8Array, codec: ResultCodec = JSON_RESULTS): Serialized {
  const spec = serializerSpec(codec.serializer)
  if (typeof meta !== 'string') return { contentType: spec.contentType, contentEncoding: spec.contentEncoding, body: Buffer.from(meta) }
  const metaJson = meta
  if (codec.serializer === 'json') return { contentType: 'application/json', contentEncoding: 'utf-8', body: Buffer.from(metaJson, 'utf8') }
  return serialize(codec.serializer, loads(metaJson, { integers: 'exact' }))
}

/** A stored or received meta: by the message's content type when it has one, else the configured serializer's. */
export function decodeStoredResult(
  body: Uint8Array | string,
  codec: ResultCodec = JSON_RESULTS,
  contentType?: string,
  contentEncoding?: string,
): ResultMeta {
  const spec = serializerSpec(codec.serializer)
  const type = (contentType || spec.contentType).toLowerCase()
  // JSON keeps its reader (numbers as the rest of tsq reads results); the accept check still applies.
  if (type === 'application/json' && codec.accept.has(type))
    return decodeResultMeta(typeof body === 'string' ? body : Buffer.from(body).toString('utf8'))
  return resultMetaFrom(decodeBody(body, type, contentEncoding ?? spec.contentEncoding, { accept: codec.accept }, 'result'))
}
