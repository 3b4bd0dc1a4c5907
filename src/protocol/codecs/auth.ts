// Celery 5.2.6's `auth` serializer (celery/security/serialization.py), byte
// for byte: base64 of signer id, signature, inner content type, inner content
// encoding and inner body joined by \x00\x01, the signature RSA-PSS (MGF1 with
// the same digest, maximum salt length) over the inner body as sent. Pure:
// keys and certificates come in as node:crypto objects, loaded by app/.

import { X509Certificate, constants, sign as cryptoSign, verify as cryptoVerify, type KeyObject } from 'node:crypto'
import { MalformedMessageError } from '../errors.js'
import { pyBytesRepr, pyRepr } from './python-repr.js'

const SEP = Buffer.from('\x00\x01', 'latin1')

/** celery.exceptions.SecurityError: the message is refused, never decoded. */
export class SecurityError extends MalformedMessageError {
  override readonly code: string = 'SECURITY'
}

/** One certificate of the store, as Celery's Certificate keeps it. */
export interface StoreCertificate {
  /** `<issuer values joined by spaces> <serial in decimal>` (Certificate.get_id). */
  id: string
  publicKey: KeyObject
  /** Signature length in bytes (key_size >> 3). */
  signatureBytes: number
  notAfter: Date
}

export interface CertStore {
  get(id: string): StoreCertificate | undefined
}

export interface Signer {
  key: KeyObject
  /** The signer's certificate id. */
  id: string
  /** Celery's security_digest: sha256 unless configured. */
  digest: string
}

// Node prints the issuer one attribute per line, values escaped as RFC 2253
// (OpenSSL's ESC_2253 | ESC_CTRL); Celery joins the raw values. Node's crypto
// has no structured name API, and a full ASN.1 library for one field would be
// more to trust than this unescape.
function unescapeDnValue(v: string): string {
  const bytes: number[] = []
  for (let i = 0; i < v.length; i++) {
    const ch = v[i]!
    if (ch === '\\' && i + 1 < v.length) {
      const hex = v.slice(i + 1, i + 3)
      if (/^[0-9A-Fa-f]{2}$/.test(hex)) {
        bytes.push(parseInt(hex, 16))
        i += 2
        continue
      }
      i += 1
      bytes.push(...Buffer.from(v[i]!, 'utf8'))
      continue
    }
    bytes.push(...Buffer.from(ch, 'utf8'))
  }
  return Buffer.from(bytes).toString('utf8')
}

/** Celery's Certificate.get_id(): issuer attribute values joined by spaces, then the serial number in decimal. */
export function certificateId(cert: X509Certificate): string {
  const values: string[] = []
  for (const line of cert.issuer.split('\n')) {
    if (line === '') continue
    // A multi-valued RDN is printed as `A=x + B=y`; Python yields each attribute.
    for (const part of line.split(' + ')) {
      const eq = part.indexOf('=')
      values.push(unescapeDnValue(eq < 0 ? part : part.slice(eq + 1)))
    }
  }
  return `${values.join(' ')} ${BigInt(`0x${cert.serialNumber}`).toString()}`
}

export function storeCertificate(cert: X509Certificate): StoreCertificate {
  const bits = cert.publicKey.asymmetricKeyDetails?.modulusLength
  if (cert.publicKey.asymmetricKeyType !== 'rsa' || !bits)
    throw new SecurityError(
      `Invalid certificate: ${certificateId(cert)} does not hold an RSA key (Celery's auth serializer signs with RSA-PSS)`,
    )
  return { id: certificateId(cert), publicKey: cert.publicKey, signatureBytes: bits >> 3, notAfter: new Date(cert.validTo) }
}

/** Python's hashes.<DIGEST>() name to Node's. */
export function digestName(digest: string): string {
  const d = digest.toLowerCase().replace(/^sha-?/, 'sha')
  const known = ['sha1', 'sha224', 'sha256', 'sha384', 'sha512', 'sha3-256', 'sha3-384', 'sha3-512']
  const node = d.replace(/^sha3_/, 'sha3-').replace(/^sha512_/, 'sha512-')
  if (!known.includes(node)) throw new SecurityError(`Unknown security_digest ${JSON.stringify(digest)} (sha256 is Celery's default)`)
  return node
}

function pssOptions(key: KeyObject, saltLength: number) {
  return { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength }
}

/**
 * The maximum salt length for a key and digest (cryptography's
 * PSS.MAX_LENGTH): what Celery signs with, and the only one it verifies.
 */
function maxSalt(keyBits: number, digest: string): number {
  const hashBytes =
    { sha1: 20, sha224: 28, sha256: 32, sha384: 48, sha512: 64, 'sha3-256': 32, 'sha3-384': 48, 'sha3-512': 64 }[digest] ?? 32
  return Math.ceil((keyBits - 1) / 8) - hashBytes - 2
}

export interface InnerBody {
  contentType: string
  contentEncoding: string
  body: Buffer
}

/** SecureSerializer.serialize after the inner dumps: the signed envelope, as the base64 text Celery sends. */
export function signAndPack(signer: Signer, inner: InnerBody): string {
  const digest = digestName(signer.digest)
  const bits = signer.key.asymmetricKeyDetails?.modulusLength ?? 2048
  const signature = cryptoSign(digest, inner.body, pssOptions(signer.key, maxSalt(bits, digest)))
  const fields = Buffer.concat([
    Buffer.from(signer.id, 'utf8'),
    SEP,
    signature,
    SEP,
    Buffer.from(inner.contentType, 'utf8'),
    SEP,
    Buffer.from(inner.contentEncoding, 'utf8'),
    SEP,
    inner.body,
  ])
  return fields.toString('base64')
}

/**
 * SecureSerializer.deserialize up to the inner loads: find the signer in the
 * store, check the signature over the inner body, hand back the inner body
 * still encoded. Throws SecurityError with Celery's words for an unknown
 * signer or a bad signature, and for a certificate that expired since the
 * store was read.
 */
export function unpackAndVerify(payload: Uint8Array | string, store: CertStore, digestSetting: string, now: Date = new Date()): InnerBody {
  try {
    return unpackAndVerifyInner(payload, store, digestSetting, now)
  } catch (error) {
    // SecureSerializer.deserialize wraps whatever went wrong in its own words.
    const inner =
      error instanceof SecurityError
        ? `SecurityError(${pyRepr(error.message)})`
        : `${(error as Error).name}(${pyRepr((error as Error).message)})`
    throw new SecurityError(`Unable to deserialize: ${inner}`, { cause: error })
  }
}

function unpackAndVerifyInner(payload: Uint8Array | string, store: CertStore, digestSetting: string, now: Date): InnerBody {
  const text = typeof payload === 'string' ? payload : Buffer.from(payload).toString('latin1')
  // Python's b64decode: non-alphabet characters are dropped, bad padding is an error.
  const compact = text.replace(/[^A-Za-z0-9+/=]/g, '')
  if (compact.length % 4 !== 0) throw new SecurityError('Incorrect padding')
  const raw = Buffer.from(compact, 'base64')
  const first = raw.indexOf(SEP)
  if (first < 0) throw new SecurityError('no signer in the signed envelope')
  const signerBytes = raw.subarray(0, first)
  const signerId = signerBytes.toString('utf8')
  const cert = store.get(signerId)
  if (!cert) throw new SecurityError(`Unknown certificate: ${pyBytesRepr(signerBytes)}`)
  if (now.getTime() >= cert.notAfter.getTime()) throw new SecurityError(`Expired certificate: '${signerId}'`)
  const sigStart = first + SEP.length
  const sigEnd = sigStart + cert.signatureBytes
  const signature = raw.subarray(sigStart, sigEnd)
  const rest = raw.subarray(sigEnd + SEP.length)
  const typeEnd = rest.indexOf(SEP)
  const encEnd = typeEnd < 0 ? -1 : rest.indexOf(SEP, typeEnd + SEP.length)
  if (typeEnd < 0 || encEnd < 0) throw new SecurityError('list index out of range')
  // Celery keeps the body up to a further \x00\x01 and verifies that prefix,
  // so a body holding the separator never verifies there; tsq verifies the
  // whole rest, which a valid signature covers anyway.
  const body = rest.subarray(encEnd + SEP.length)
  const digest = digestName(digestSetting)
  const bits = cert.signatureBytes * 8
  let ok: boolean
  try {
    ok = cryptoVerify(digest, body, pssOptions(cert.publicKey, maxSalt(bits, digest)), signature)
  } catch {
    ok = false
  }
  if (!ok) throw new SecurityError('Bad signature: InvalidSignature()')
  return {
    contentType: rest.subarray(0, typeEnd).toString('utf8'),
    contentEncoding: rest.subarray(typeEnd + SEP.length, encEnd).toString('utf8'),
    body: Buffer.from(body),
  }
}

export { X509Certificate }
