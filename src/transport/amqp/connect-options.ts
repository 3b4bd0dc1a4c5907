import type { Options } from 'amqplib'
import type { ConnectionOptions } from 'node:tls'
import { BadBrokerUrlError } from '../errors.js'
import { tlsConnectOptions, tlsPlan, type SslSettings, type TlsPlan } from '../tls.js'
import { maskUrl, parseBrokerUrl } from '../url.js'

/** What an app's conf adds to an AMQP URL: Celery's broker_use_ssl and broker_login_method. */
export interface AmqpUrlSettings {
  ssl?: SslSettings | boolean | null
  loginMethod?: string
}

export interface AmqpConnectSettings {
  connect: Options.Connect
  /** TLS, when the URL or broker_use_ssl asks for it; null for a plain connection. */
  tls: TlsPlan | null
  /** kombu's login_method: EXTERNAL presents no password, the client certificate is the identity. */
  external: boolean
  /** One line naming the broker without its password, for errors and banners. */
  displayUrl: string
}

/** kombu's broker_heartbeat default is 120 s; a shorter one notices a dead broker sooner. */
const DEFAULT_HEARTBEAT_S = 60
/** RabbitMQ's own frame_max; amqplib's 4 KiB default splits task bodies into many frames. */
const FRAME_MAX = 131_072

/**
 * Reads a broker URL the way kombu does: `pyamqp://` is `amqp://`, and the
 * vhost is the path after its first slash, URL-decoded, with an empty path
 * meaning `/` (so `amqp://h//`, `amqp://h/` and `amqp://h` all reach vhost `/`).
 */
export function amqpConnectSettings(url: string, settings: AmqpUrlSettings = {}): AmqpConnectSettings {
  const parsed = parseBrokerUrl(url)
  if (!['amqp', 'amqps', 'pyamqp'].includes(parsed.scheme)) {
    throw new BadBrokerUrlError(`not an AMQP URL: ${maskUrl(url)}`)
  }
  const tls = tlsPlan(url, settings.ssl)
  let vhost: string
  try {
    vhost = decodeURIComponent(parsed.path)
  } catch {
    throw new BadBrokerUrlError(`malformed vhost in broker URL: ${maskUrl(url)}`)
  }
  const query = new URL(url).searchParams
  const heartbeatParam = query.get('heartbeat')
  const heartbeat = heartbeatParam === null ? DEFAULT_HEARTBEAT_S : Number(heartbeatParam)
  if (!Number.isFinite(heartbeat) || heartbeat < 0) {
    throw new BadBrokerUrlError(`bad heartbeat in broker URL: ${maskUrl(url)} (expected seconds >= 0)`)
  }
  const loginMethod = (query.get('login_method') ?? settings.loginMethod ?? 'AMQPLAIN').toUpperCase()
  if (!['AMQPLAIN', 'PLAIN', 'EXTERNAL'].includes(loginMethod)) {
    throw new BadBrokerUrlError(`bad login_method in broker URL: ${maskUrl(url)} (expected AMQPLAIN, PLAIN or EXTERNAL)`)
  }
  if (loginMethod === 'EXTERNAL' && !tls?.certfile) {
    throw new BadBrokerUrlError(`login_method=EXTERNAL needs a client certificate (ssl_certfile, or certfile in broker_use_ssl): ${maskUrl(url)}`)
  }
  return {
    tls,
    external: loginMethod === 'EXTERNAL',
    connect: {
      protocol: tls ? 'amqps' : 'amqp',
      hostname: parsed.hostname,
      port: parsed.port ?? (tls ? 5671 : 5672),
      username: parsed.username ?? 'guest',
      password: parsed.password ?? 'guest',
      vhost: vhost === '' ? '/' : vhost,
      heartbeat: Math.round(heartbeat),
      frameMax: FRAME_MAX,
    },
    displayUrl: maskUrl(url),
  }
}

/** The socket options amqplib passes to tls.connect (key material read here, at connect time). */
export function amqpSocketTlsOptions(settings: AmqpConnectSettings): ConnectionOptions {
  return settings.tls ? tlsConnectOptions(settings.tls, settings.connect.hostname ?? 'localhost', settings.displayUrl) : {}
}
