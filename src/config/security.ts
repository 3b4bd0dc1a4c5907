// Celery's security settings and setup_security (celery/security/__init__.py):
// the key, certificate and certificate store read from files, and the
// serializers a sender uses and a receiver accepts, from the app's conf.
import { X509Certificate, createPrivateKey } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { globSync } from 'tinyglobby'
import { codedError, DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, limitSetting, type MessageLimits } from '../protocol/index.js'
import {
  SecurityError,
  acceptContent,
  certificateId,
  serializerSpec,
  storeCertificate,
  type BodyDecoder,
  type BodyEncoder,
  type CertStore,
  type Signer,
  type StoreCertificate,
} from '../protocol/index.js'

/** celery.exceptions.ImproperlyConfigured, with Celery's texts. */
export class ImproperlyConfiguredError extends codedError('CONFIG') {}

export const SETTING_MISSING = `You have to configure a special task serializer
for signing and verifying tasks:
    * task_serializer = 'auth'

You have to accept only tasks which are serialized with 'auth'.
There is no point in signing messages if they are not verified.
    * accept_content = ['auth']`

export const SECURITY_SETTING_MISSING = `Sorry, but you have to configure the
    * security_key
    * security_certificate, and the
    * security_cert_store
configuration settings to use the auth serializer.`

export interface SecurityOptions {
  /** Serializers (names or content types) still accepted beside auth: kombu's disable_insecure_serializers(allowed). */
  allowedSerializers?: string[]
  key?: string
  cert?: string
  store?: string
  digest?: string
  /** The serializer inside the signed envelope (json by default). */
  serializer?: string
}

export interface LoadedSecurity {
  signer: Signer
  store: CertStore
  digest: string
  inner: string
  /** Certificates of the store that had expired when it was read. */
  expired: string[]
}

function readText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch (error) {
    throw new ImproperlyConfiguredError(`cannot read ${what} ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
}

/** Celery's PrivateKey and Certificate: PEM text in, the signer out. */
export function loadSigner(keyPath: string, certPath: string, digest: string): Signer {
  let key
  try {
    key = createPrivateKey(readText(keyPath, 'security_key'))
  } catch (error) {
    if (error instanceof ImproperlyConfiguredError) throw error
    throw new SecurityError(`Invalid private key: ${(error as Error).message}`)
  }
  let cert
  try {
    cert = new X509Certificate(readText(certPath, 'security_certificate'))
  } catch (error) {
    if (error instanceof ImproperlyConfiguredError) throw error
    throw new SecurityError(`Invalid certificate: ${(error as Error).message}`)
  }
  return { key, id: certificateId(cert), digest }
}

/**
 * Celery's FSCertStore: every file the glob matches (a directory means all its
 * files), one certificate each, ids unique. Celery refuses to start on an
 * expired certificate; tsq loads it, says so, and refuses each message it
 * signed, so one peer's lapsed certificate does not stop every worker.
 */
export function loadCertStore(pattern: string, now: Date = new Date()): { store: CertStore; expired: string[] } {
  let glob = pattern
  try {
    if (statSync(pattern).isDirectory()) glob = join(pattern, '*')
  } catch {
    // Not a path: a glob.
  }
  const certs = new Map<string, StoreCertificate>()
  const expired: string[] = []
  for (const file of globSync([glob], { absolute: true, onlyFiles: true, expandDirectories: false }).sort()) {
    let cert: StoreCertificate
    try {
      cert = storeCertificate(new X509Certificate(readText(file, 'certificate')))
    } catch (error) {
      if (error instanceof SecurityError || error instanceof ImproperlyConfiguredError) throw error
      throw new SecurityError(`Invalid certificate: ${file}: ${(error as Error).message}`)
    }
    if (certs.has(cert.id)) throw new SecurityError(`Duplicate certificate: '${cert.id}'`)
    if (now.getTime() >= cert.notAfter.getTime()) expired.push(cert.id)
    certs.set(cert.id, cert)
  }
  return { store: { get: (id) => certs.get(id) }, expired }
}

/** setup_security's checks and loading, conf first, arguments over it. */
export function loadSecurity(conf: Record<string, unknown>, o: SecurityOptions = {}): LoadedSecurity {
  const key = o.key ?? (conf.security_key as string | undefined)
  const cert = o.cert ?? (conf.security_certificate as string | undefined)
  const store = o.store ?? (conf.security_cert_store as string | undefined)
  const digest = o.digest ?? (conf.security_digest as string | undefined) ?? 'sha256'
  if (!key || !cert || !store) throw new ImproperlyConfiguredError(SECURITY_SETTING_MISSING)
  const inner = o.serializer ?? (conf.security_serializer as string | undefined) ?? 'json'
  serializerSpec(inner)
  const loaded = loadCertStore(store)
  return { signer: loadSigner(key, cert, digest), store: loaded.store, digest, inner, expired: loaded.expired }
}

/** Celery's setup_security: the conf must say auth for both sending and accepting. */
export function checkSecurityConf(conf: Record<string, unknown>): void {
  const accept = conf.accept_content
  if (conf.task_serializer !== 'auth' || !Array.isArray(accept) || accept.length !== 1 || accept[0] !== 'auth')
    throw new ImproperlyConfiguredError(SETTING_MISSING)
}

/** What a sender encodes task bodies with (task_serializer), signed when it is auth. */
export function taskEncoder(conf: Record<string, unknown>, security: LoadedSecurity | undefined): BodyEncoder {
  const serializer = typeof conf.task_serializer === 'string' ? conf.task_serializer : 'json'
  serializerSpec(serializer)
  if (serializer !== 'auth') return { serializer }
  if (!security) throw new ImproperlyConfiguredError(SECURITY_SETTING_MISSING)
  return { serializer, signer: security.signer, inner: security.inner }
}

/** What a worker accepts (accept_content), verifies signed bodies with, and how deep and large a message may be. */
export function taskDecoder(conf: Record<string, unknown>, security: LoadedSecurity | undefined, allowed?: string[]): BodyDecoder {
  const accept = acceptContent(allowed ? [...((conf.accept_content as string[] | undefined) ?? []), ...allowed] : conf.accept_content)
  return { accept, limits: messageLimits(conf), ...(security ? { verify: { store: security.store, digest: security.digest } } : {}) }
}

/** worker_message_max_depth and worker_message_max_bytes (tsq's own settings; see protocol/limits.ts). */
export function messageLimits(conf: Record<string, unknown>): MessageLimits {
  try {
    return {
      maxDepth: limitSetting(conf.worker_message_max_depth, 'worker_message_max_depth', DEFAULT_MAX_DEPTH, DEFAULT_MAX_DEPTH),
      maxBytes: limitSetting(conf.worker_message_max_bytes, 'worker_message_max_bytes', DEFAULT_MAX_BYTES),
    }
  } catch (error) {
    throw new ImproperlyConfiguredError((error as Error).message)
  }
}

/** result_serializer (json by default; Celery's results stay JSON under auth unless set) and result_accept_content (accept_content when unset). */
export function resultCodecSettings(conf: Record<string, unknown>): { serializer: string; accept: Set<string> } {
  const serializer = typeof conf.result_serializer === 'string' ? conf.result_serializer : 'json'
  if (serializer === 'auth')
    throw new ImproperlyConfiguredError('result_serializer auth is not supported by tsq: Celery signs task messages, results stay unsigned')
  serializerSpec(serializer)
  const accept = acceptContent(conf.result_accept_content ?? conf.accept_content)
  return { serializer, accept }
}
