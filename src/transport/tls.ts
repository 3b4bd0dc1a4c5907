// TLS for every URL tsq connects to (broker, result backend, beat's and the
// locks' Redis): Celery's settings (`broker_use_ssl`, `redis_backend_use_ssl`:
// ca_certs, certfile, keyfile, cert_reqs) and the same as query parameters of
// the URL (`ssl_cert_reqs`, `ssl_ca_certs`, `ssl_certfile`, `ssl_keyfile`, as
// redis-py reads them; tsq reads them on `amqps://` too), turned into Node's
// tls options here, once. Verification, server name included, is on unless
// cert_reqs is `none`; nothing else turns it off.
import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { checkServerIdentity, connect as tlsConnect, rootCertificates, type ConnectionOptions } from 'node:tls'
import { BadBrokerUrlError } from './errors.js'
import { maskUrl } from './url.js'

export type CertReqs = 'required' | 'optional' | 'none'

/** Celery's names, as in `broker_use_ssl = {...}` (Python's ssl.CERT_* also accepted). */
export interface SslSettings {
  ca_certs?: string
  certfile?: string
  keyfile?: string
  cert_reqs?: string | number
  /** kombu's py-amqp option: the name checked in the server's certificate when it differs from the URL's host. */
  server_hostname?: string
}

/** What a connection does about TLS, decided from the URL and the app's setting. Paths, never key material. */
export interface TlsPlan {
  certReqs: CertReqs
  caCerts?: string
  certfile?: string
  keyfile?: string
  serverHostname?: string
}

const URL_PARAMS = { ssl_cert_reqs: 'cert_reqs', ssl_ca_certs: 'ca_certs', ssl_certfile: 'certfile', ssl_keyfile: 'keyfile' } as const

/** `required`, `CERT_REQUIRED`, `ssl.CERT_REQUIRED` and Python's numbers (0 none, 1 optional, 2 required). */
export function parseCertReqs(value: unknown, where: string): CertReqs {
  if (value === 0 || value === 1 || value === 2) return (['none', 'optional', 'required'] as const)[value]
  const text =
    typeof value === 'string'
      ? value
          .trim()
          .toLowerCase()
          .replace(/^(ssl\.)?cert_/, '')
      : ''
  if (text === 'required' || text === 'optional' || text === 'none') return text
  throw new BadBrokerUrlError(`${where}: cert_reqs must be required, optional or none, got ${JSON.stringify(value)}`)
}

/**
 * Whether and how `url` uses TLS. `rediss://` and `amqps://` always do;
 * `redis://` and `amqp://` do when the app's setting asks for it (Celery's
 * `broker_use_ssl = True` or a dict). The URL's own parameters win over the
 * setting, as in Celery's Redis backend. Returns null for plain connections.
 */
export function tlsPlan(url: string, setting?: SslSettings | boolean | null): TlsPlan | null {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase() ?? ''
  const secureScheme = scheme === 'rediss' || scheme === 'amqps'
  if (!secureScheme && !setting) return null
  const merged: SslSettings = typeof setting === 'object' && setting !== null ? { ...setting } : {}
  let query: URLSearchParams
  try {
    query = new URL(url).searchParams
  } catch {
    throw new BadBrokerUrlError(`malformed URL: ${maskUrl(url)}`)
  }
  for (const [param, key] of Object.entries(URL_PARAMS)) {
    const value = query.get(param)
    if (value !== null && value !== '') merged[key] = value
  }
  const where = maskUrl(url)
  return {
    certReqs: merged.cert_reqs === undefined ? 'required' : parseCertReqs(merged.cert_reqs, where),
    caCerts: merged.ca_certs || undefined,
    certfile: merged.certfile || undefined,
    keyfile: merged.keyfile || undefined,
    serverHostname: merged.server_hostname || undefined,
  }
}

function readPem(path: string, what: string, where: string): Buffer {
  try {
    return readFileSync(path)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (code ?? 'unreadable')
    // The path only: a key's contents never reach a message.
    throw new BadBrokerUrlError(`${where}: cannot read ${what} ${path}: ${reason}`)
  }
}

const DEFERRED_EXTRA_CA = Symbol.for('tsq.deferredExtraCaCerts')
const PEM_CERT = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g
let deferredExtraCa: string[] | null | undefined

/**
 * NODE_EXTRA_CA_CERTS's certificates when bin/run.js's launcher kept the file
 * from Node's start (a one-shot command, the trick TSQ_NO_DEFERRED_CA_CERTS
 * turns off: bench/README.md#tricks), else null: Node then loaded it itself. Node adds
 * them to its bundled roots, and warns and goes on without them when the file
 * cannot be read; so here, read once, when the first TLS connection is made.
 */
function deferredExtraCaCerts(): string[] | null {
  if (deferredExtraCa !== undefined) return deferredExtraCa
  const file = (process as unknown as Record<symbol, unknown>)[DEFERRED_EXTRA_CA]
  deferredExtraCa = null
  if (typeof file !== 'string' || file === '') return null
  let certs: string[] = []
  try {
    certs = readFileSync(file, 'utf8').match(PEM_CERT) ?? []
    if (certs.length === 0) process.emitWarning(`Ignoring extra certs from \`${file}\`, load failed: no certificate in the file`)
  } catch (error) {
    process.emitWarning(
      `Ignoring extra certs from \`${file}\`, load failed: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    )
  }
  deferredExtraCa = certs.length ? [...rootCertificates, ...certs] : null
  return deferredExtraCa
}

/**
 * Node's tls options for `plan` on `host`: the CA file (else Node's own
 * store, with NODE_EXTRA_CA_CERTS's certificates as Node would add them),
 * the client certificate and key, verification as cert_reqs says.
 * `optional` verifies like `required`: for a client, Python's CERT_OPTIONAL
 * still checks the certificate the server always sends.
 */
export function tlsConnectOptions(plan: TlsPlan, host: string, url: string): ConnectionOptions {
  const where = maskUrl(url)
  if (plan.keyfile && !plan.certfile) throw new BadBrokerUrlError(`${where}: a keyfile needs its certfile`)
  const options: ConnectionOptions = {}
  if (plan.caCerts) options.ca = readPem(plan.caCerts, 'ca_certs', where)
  else {
    const extra = deferredExtraCaCerts()
    if (extra) options.ca = extra
  }
  if (plan.certfile) {
    options.cert = readPem(plan.certfile, 'certfile', where)
    // Python's load_cert_chain reads the key from the certificate file when no keyfile is given.
    options.key = plan.keyfile ? readPem(plan.keyfile, 'keyfile', where) : options.cert
  }
  const name = plan.serverHostname ?? host
  if (!isIP(name)) options.servername = name
  if (plan.certReqs === 'none') {
    options.rejectUnauthorized = false
    options.checkServerIdentity = () => undefined
  } else {
    options.rejectUnauthorized = true
    options.checkServerIdentity = (_servername, cert) => checkServerIdentity(name, cert)
  }
  return options
}

/** For the banner and logs: how a connection is secured, or null when it is not. */
export function describeTlsPlan(plan: TlsPlan | null): string | null {
  if (!plan) return null
  if (plan.certReqs === 'none') return 'TLS, certificate verification OFF (cert_reqs=none)'
  return `TLS, verified${plan.certfile ? ', client certificate' : ''}`
}

const UNKNOWN_CA = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
  'CERT_UNTRUSTED',
])

/**
 * The reason a TLS handshake failed, in words an operator can act on, or
 * undefined when `err` is not a TLS failure. The first group is our check of
 * the server; the `ERR_SSL_*_ALERT_*` group is the server refusing us.
 */
export function describeTlsFailure(err: unknown): string | undefined {
  if (!(err instanceof Error)) return undefined
  const code = (err as NodeJS.ErrnoException).code ?? ''
  if (UNKNOWN_CA.has(code)) return `the server's certificate is not signed by a trusted CA (unknown CA: ${err.message})`
  if (code === 'CERT_HAS_EXPIRED') return "the server's certificate has expired"
  if (code === 'CERT_NOT_YET_VALID') return "the server's certificate is not valid yet"
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return `the server's certificate does not name this host (name mismatch: ${err.message.replace(/^Hostname\/IP does not match certificate's altnames: /, '')})`
  if (code === 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED') return 'the server requires a client certificate (no client certificate sent)'
  if (code === 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA') return 'the server refused our client certificate (unknown CA)'
  if (code === 'ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED') return 'the server refused our client certificate (expired)'
  if (code === 'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE') return 'the server refused our client certificate (bad certificate)'
  if (code === 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE')
    return 'the TLS handshake failed (the server refused our certificate or our TLS settings)'
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'EPROTO')
    return `TLS handshake failed (is this a TLS port?): ${err.message.split('\n')[0]}`
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_')) return `TLS handshake failed: ${err.message.split('\n')[0]}`
  return undefined
}

/** How long a diagnostic handshake waits for the server's verdict on our certificate. */
const PROBE_WAIT_MS = 1500

/**
 * Why a TLS server dropped us, asked again without sending anything. Under
 * TLS 1.3 the server judges the client certificate after our side of the
 * handshake is done; a client that writes at once (ioredis sends its first
 * command immediately) gets a reset that discards the server's alert, so the
 * driver reports only ECONNRESET. A second handshake that writes nothing reads
 * the alert. Undefined when that handshake is accepted or fails for no TLS
 * reason.
 */
export async function probeTlsRefusal(host: string, port: number, options: ConnectionOptions): Promise<string | undefined> {
  return new Promise((resolve) => {
    let settled = false
    const socket = tlsConnect({ ...options, host, port })
    const finish = (reason: string | undefined) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resolve(reason)
    }
    const timer = setTimeout(() => finish(undefined), PROBE_WAIT_MS * 2)
    socket.on('secureConnect', () => {
      setTimeout(() => finish(undefined), PROBE_WAIT_MS).unref()
    })
    socket.on('error', (error) => finish(describeTlsFailure(error)))
    socket.on('close', () => finish(undefined))
    socket.on('data', () => undefined)
  })
}

/** A reset or broken pipe on a TLS connection: the case probeTlsRefusal explains. */
export function isTlsReset(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code
  return code === 'ECONNRESET' || code === 'EPIPE'
}
