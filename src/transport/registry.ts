import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { BadBrokerUrlError } from './errors.js'
import type { RedisLayoutOptions } from './redis/options.js'
import type { RedisLiveness } from './redis/liveness.js'
import type { SentinelSettings } from './redis/sentinel.js'
import type { SslSettings } from './tls.js'
import type { Transport } from './transport.js'
import type { DelayedQueueType } from './amqp/delayed-queue-type.js'
import { maskUrl, parseBrokerUrl, splitUrlList, type FailoverStrategy } from './url.js'

/** The embedded broker's folder when no broker is configured: per user, any working directory. */
export function defaultFileBrokerDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.TSQ_HOME ? join(resolve(env.TSQ_HOME), 'broker') : join(homedir(), '.tsq', 'broker')
}

export function defaultFileBrokerUrl(env: NodeJS.ProcessEnv = process.env): string {
  return `file://${defaultFileBrokerDir(env)}`
}

/** amqps and amqp may share a list (some nodes behind TLS); pyamqp is amqp. */
function amqpScheme(scheme: string): string {
  return ['amqp', 'amqps', 'pyamqp'].includes(scheme) ? 'amqp' : scheme
}

const SCHEMES = ['amqp', 'amqps', 'pyamqp', 'redis', 'rediss', 'sentinel', 'file', 'filesystem'] as const

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
  /** broker_transport_options.master_name and sentinel_kwargs, for a sentinel:// broker. */
  sentinel?: SentinelSettings
  /** broker_failover_strategy: how a failover list (`url1;url2`) is walked. */
  failoverStrategy?: FailoverStrategy
  /** broker_native_delayed_delivery_queue_type (AMQP): the x-queue-type of kombu's celery_delayed_* queues. */
  delayedQueueType?: DelayedQueueType
  /** broker_heartbeat (AMQP), seconds; 0 or null: off; the URL's ?heartbeat= wins. */
  heartbeat?: number | null
  /** broker_heartbeat_checkrate (AMQP). */
  heartbeatCheckrate?: number
  /** Redis: broker_transport_options' socket_timeout, socket_connect_timeout, socket_keepalive, health_check_interval. */
  redisLiveness?: RedisLiveness
  /** Redis: claims may overlap within a small prefetch window while a CPU is free (the solo pool's worker; see redis/tricks/claim-overlap.ts). */
  overlapClaims?: boolean
  /** AMQP: publishes on a connection of their own, so consuming and acking go on under a RabbitMQ alarm (a worker's transport). */
  separatePublisher?: boolean
}

export async function createTransport(url: string, settings: TransportSettings = {}): Promise<Transport> {
  const urls = splitUrlList(url)
  const parsed = parseBrokerUrl(urls[0]!)
  if (urls.length > 1) {
    const schemes = new Set(urls.map((u) => amqpScheme(parseBrokerUrl(u).scheme)))
    if (schemes.size > 1) throw new BadBrokerUrlError(`a failover list must name one kind of broker: ${maskUrl(url)}`)
    // sentinel:// lists are Redis Sentinel's own (its transport reads the whole list).
    if (!['amqp', 'amqps', 'pyamqp', 'sentinel'].includes(parsed.scheme)) {
      throw new BadBrokerUrlError(
        `failover lists are for RabbitMQ (amqp://a//;amqp://b//); ${parsed.scheme}:// takes one URL: ${maskUrl(url)}`,
      )
    }
  }
  switch (parsed.scheme) {
    case 'amqp':
    case 'amqps':
    case 'pyamqp': {
      const { AmqpTransport } = await import('./amqp/amqp-transport.js')
      return new AmqpTransport(url, {
        ssl: settings.ssl,
        loginMethod: settings.loginMethod,
        failoverStrategy: settings.failoverStrategy,
        delayedQueueType: settings.delayedQueueType,
        separatePublisher: settings.separatePublisher,
        ...(settings.heartbeat !== undefined ? { heartbeat: settings.heartbeat } : {}),
        ...(settings.heartbeatCheckrate !== undefined ? { heartbeatCheckrate: settings.heartbeatCheckrate } : {}),
      })
    }
    case 'redis':
    case 'rediss':
    case 'sentinel': {
      const { RedisTransport } = await import('./redis/redis-transport.js')
      // `sentinel` is read for sentinel:// URLs only.
      return new RedisTransport(url, {
        defaultVisibilityTimeout: settings.visibilityTimeout,
        ssl: settings.ssl,
        layout: settings.redisLayout,
        sentinel: settings.sentinel,
        overlapClaims: settings.overlapClaims,
        liveness: settings.redisLiveness,
      })
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
