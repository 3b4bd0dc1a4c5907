import type { Options } from 'amqplib'
import { BadBrokerUrlError } from '../errors.js'
import { maskUrl, parseBrokerUrl } from '../url.js'

export interface AmqpConnectSettings {
  connect: Options.Connect
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
export function amqpConnectSettings(url: string): AmqpConnectSettings {
  const parsed = parseBrokerUrl(url)
  if (!['amqp', 'amqps', 'pyamqp'].includes(parsed.scheme)) {
    throw new BadBrokerUrlError(`not an AMQP URL: ${maskUrl(url)}`)
  }
  const tls = parsed.scheme === 'amqps'
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
  return {
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
