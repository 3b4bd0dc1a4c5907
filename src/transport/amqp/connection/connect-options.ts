import type { Options } from 'amqplib'
import type { ConnectionOptions } from 'node:tls'
import { BadBrokerUrlError } from '../../errors.js'
import { tlsConnectOptions, tlsPlan, type SslSettings, type TlsPlan } from '../../tls.js'
import { maskUrl, parseBrokerUrl } from '../../url.js'

/** What an app's conf adds to an AMQP URL: Celery's broker_use_ssl and broker_login_method. */
export interface AmqpUrlSettings {
  ssl?: SslSettings | boolean | null
  loginMethod?: string
  /** broker_heartbeat, seconds: 0 or null turns heartbeats off; the URL's ?heartbeat= wins. */
  heartbeat?: number | null
  /** broker_heartbeat_checkrate: the heartbeat is checked every heartbeat / rate seconds. */
  heartbeatCheckrate?: number
}

export interface AmqpConnectSettings {
  connect: Options.Connect
  /** TLS, when the URL or broker_use_ssl asks for it; null for a plain connection. */
  tls: TlsPlan | null
  /** kombu's login_method: EXTERNAL presents no password, the client certificate is the identity. */
  external: boolean
  /** One line naming the broker without its password, for errors and banners. */
  displayUrl: string
  /** broker_heartbeat_checkrate (Celery's default 3.0). */
  heartbeatCheckrate: number
}

/** Celery's broker_heartbeat; RabbitMQ's own 60 s is lower, and the lower one is used. */
export const DEFAULT_HEARTBEAT_S = 120
/** Celery 5.2's broker_heartbeat_checkrate. */
export const DEFAULT_HEARTBEAT_CHECKRATE = 3
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
  const fromConf = settings.heartbeat === undefined ? DEFAULT_HEARTBEAT_S : (settings.heartbeat ?? 0)
  const heartbeat = heartbeatParam === null ? fromConf : Number(heartbeatParam)
  if (!Number.isFinite(heartbeat) || heartbeat < 0) {
    throw new BadBrokerUrlError(`bad heartbeat in broker URL: ${maskUrl(url)} (expected seconds >= 0)`)
  }
  const loginMethod = (query.get('login_method') ?? settings.loginMethod ?? 'AMQPLAIN').toUpperCase()
  if (!['AMQPLAIN', 'PLAIN', 'EXTERNAL'].includes(loginMethod)) {
    throw new BadBrokerUrlError(`bad login_method in broker URL: ${maskUrl(url)} (expected AMQPLAIN, PLAIN or EXTERNAL)`)
  }
  if (loginMethod === 'EXTERNAL' && !tls?.certfile) {
    throw new BadBrokerUrlError(
      `login_method=EXTERNAL needs a client certificate (ssl_certfile, or certfile in broker_use_ssl): ${maskUrl(url)}`,
    )
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
    heartbeatCheckrate:
      settings.heartbeatCheckrate && settings.heartbeatCheckrate > 0 ? settings.heartbeatCheckrate : DEFAULT_HEARTBEAT_CHECKRATE,
  }
}

/** The socket options amqplib passes to tls.connect (key material read here, at connect time). */
export function amqpSocketTlsOptions(settings: AmqpConnectSettings): ConnectionOptions {
  return settings.tls ? tlsConnectOptions(settings.tls, settings.connect.hostname ?? 'localhost', settings.displayUrl) : {}
}
