// A message body through the configured serializer, signed or not: what a
// client sends for task_serializer, and what a worker accepts under
// accept_content. A signed body is verified before anything decodes it.

import { signAndPack, unpackAndVerify, type CertStore, type Signer } from './auth.js'
import { ContentDisallowedError, SERIALIZERS, deserialize, serialize, serializerSpec, type Serialized } from './serializers.js'
import { DEFAULT_MESSAGE_LIMITS, sizeError, type MessageLimits } from './limits.js'

export interface BodyEncoder {
  /** task_serializer (or result_serializer): json, msgpack, yaml or auth. */
  serializer: string
  /** For auth: the key and certificate id that sign, and the serializer inside the envelope (setup_security's `serializer`). */
  signer?: Signer
  inner?: string
}

export interface BodyDecoder {
  /** accept_content as content types (acceptContent()). */
  accept: ReadonlySet<string>
  /** The certificate store and digest, when security is set up. */
  verify?: { store: CertStore; digest: string }
  /** Depth and size limits (limits.ts); the defaults when absent. */
  limits?: MessageLimits
}

export function encodeBody(value: unknown, enc: BodyEncoder): Serialized {
  const spec = serializerSpec(enc.serializer)
  if (spec.name !== 'auth') return serialize(spec.name, value)
  if (!enc.signer)
    throw new ContentDisallowedError(
      spec.contentType,
      'task_serializer is auth but no key is loaded: call app.setupSecurity() or set security_key, security_certificate and security_cert_store',
    )
  const inner = serialize(enc.inner ?? 'json', value)
  return {
    contentType: SERIALIZERS.auth.contentType,
    contentEncoding: SERIALIZERS.auth.contentEncoding,
    body: Buffer.from(signAndPack(enc.signer, inner), 'latin1'),
  }
}

/**
 * kombu's loads with Celery's auth serializer registered: the accept check,
 * then for application/data the signature, then the inner body (accepted
 * whatever its type once verified, as kombu's force=True does; pickle still
 * never).
 */
export function decodeBody(
  body: Uint8Array | string,
  contentType: string,
  contentEncoding: string | undefined,
  dec: BodyDecoder,
  what = 'body',
): unknown {
  const type = (contentType || 'application/data').trim().toLowerCase()
  if (type !== SERIALIZERS.auth.contentType) return deserialize(body, type, contentEncoding, dec.accept, what, dec.limits)
  if (!dec.verify)
    throw new ContentDisallowedError(
      type,
      'Refusing to deserialize signed content (application/data): this worker has no security settings to verify it (security_cert_store)',
    )
  // The signed envelope is base64 of the inner body plus signer, signature and types: sized before it is decoded.
  const maxSigned = Math.ceil(((dec.limits ?? DEFAULT_MESSAGE_LIMITS).maxBytes * 4) / 3) + 64 * 1024
  if (body.length > maxSigned) throw sizeError(`signed ${what}`, body.length, maxSigned)
  const inner = unpackAndVerify(body, dec.verify.store, dec.verify.digest)
  return deserialize(inner.body, inner.contentType, inner.contentEncoding, null, what, dec.limits)
}
