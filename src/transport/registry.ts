import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { BadBrokerUrlError } from './errors.js'
import type { RedisLayoutOptions } from './redis/options.js'
import type { SslSettings } from './tls.js'
import type { Transport } from './transport.js'
import { maskUrl, parseBrokerUrl } from './url.js'

/** The embedded broker's folder when no broker is configured: per user, any working directory. */
export function defaultFileBrokerDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.TSQ_HOME ? join(resolve(env.TSQ_HOME), 'broker') : join(homedir(), '.tsq', 'broker')
}

export function defaultFileBrokerUrl(env: NodeJS.ProcessEnv = process.env): string {
  return `file://${defaultFileBrokerDir(env)}`
}

const SCHEMES = ['amqp', 'amqps', 'pyamqp', 'redis', 'rediss', 'file', 'filesystem'] as const

function didYouMean(scheme: string): string {
  const near = SCHEMES.find((s) => s.startsWith(scheme.slice(0, 2)))
  return near ? ` Did you mean ${near}?` : ''
}

/**
 * Builds a transport from a URL. Drivers are imported lazily so that commands
 * that never touch a broker (--help, --version) load none of them.
 */
/** What an app's conf adds to its broker URL (Celery's broker_transport_options). */
export interface TransportSettings {
  /** broker_transport_options.visibility_timeout, for Redis; the URL's own query wins. */
  visibilityTimeout?: number
  /** broker_use_ssl: true, or Celery's dict (ca_certs, certfile, keyfile, cert_reqs); the URL's ssl_* parameters win. */
  ssl?: SslSettings | boolean | null
  /** broker_login_method (AMQP): EXTERNAL logs in with the client certificate; the URL's login_method wins. */
  loginMethod?: string
  /** broker_transport_options that shape Redis's key layout: global_keyprefix, sep, priority_steps, fanout_prefix, fanout_patterns, queue_order_strategy. */
  redisLayout?: RedisLayoutOptions
}

export async function createTransport(url: string, settings: TransportSettings = {}): Promise<Transport> {
  const parsed = parseBrokerUrl(url)
  switch (parsed.scheme) {
    case 'amqp':
    case 'amqps':
    case 'pyamqp': {
      const { AmqpTransport } = await import('./amqp/amqp-transport.js')
      return new AmqpTransport(url, { ssl: settings.ssl, loginMethod: settings.loginMethod })
    }
    case 'redis':
    case 'rediss': {
      const { RedisTransport } = await import('./redis/redis-transport.js')
      return new RedisTransport(url, { defaultVisibilityTimeout: settings.visibilityTimeout, ssl: settings.ssl, layout: settings.redisLayout })
    }
    case 'file':
    case 'filesystem': {
      const { FileTransport } = await import('./file/file-transport.js')
      const dir = parsed.path === '' ? defaultFileBrokerDir() : resolve(parsed.path)
      return new FileTransport(dir)
    }
    default:
      throw new BadBrokerUrlError(`no such transport: ${parsed.scheme} (in ${maskUrl(url)}).${didYouMean(parsed.scheme)}`)
  }
}
