// `redis://[user:pass@]host[:port][/db][?visibility_timeout=N]` → connection and
// kombu transport options. The db also names the pub/sub prefix `/{db}.`.
import { BadBrokerUrlError } from '../errors.js'
import { describeTlsFailure, isTlsReset, probeTlsRefusal, tlsConnectOptions, tlsPlan, type SslSettings, type TlsPlan } from '../tls.js'
import { maskUrl, parseBrokerUrl } from '../url.js'
import type { ConnectionOptions } from 'node:tls'
import { RedisKeys, type RedisKeyOptions } from './keys.js'
import type { RedisLiveness } from './liveness.js'

/** kombu `queue_order_strategy`: which queue the next BRPOP names first. */
export type QueueOrderStrategy = 'round_robin' | 'priority' | 'sorted'

/** broker_transport_options that change what tsq's Redis broker names and serves first (kombu's Channel options). */
export interface RedisLayoutOptions extends RedisKeyOptions {
  queueOrderStrategy?: QueueOrderStrategy
}
import {
  explainSentinelFailure,
  isSentinelUrl,
  parseSentinelUrl,
  sentinelClientOptions,
  type SentinelSettings,
  type SentinelTarget,
} from './sentinel.js'

export interface RedisTransportOptions {
  /** Seconds an unacked message stays invisible before restore_visible returns it (kombu default 3600). */
  visibilityTimeout?: number
  /** The same, when neither `visibilityTimeout` nor the URL's query gives one (the app's broker_transport_options). */
  defaultVisibilityTimeout?: number
  /** How often this transport runs restore_visible while consuming; default min(10 s, visibility/2). */
  restoreIntervalMs?: number
  /** Give up on the first connect after this long. */
  connectTimeoutMs?: number
  /** Prefix of the CLIENT SETNAME names of this transport's connections. */
  connectionName?: string
  /** broker_use_ssl (or redis_backend_use_ssl): true or Celery's dict; the URL's ssl_* parameters win. */
  ssl?: SslSettings | boolean | null
  /** global_keyprefix, sep, priority_steps, fanout_prefix, fanout_patterns, queue_order_strategy. */
  layout?: RedisLayoutOptions
  /** For a sentinel:// URL: master_name and sentinel_kwargs from the transport options. */
  sentinel?: SentinelSettings
  /** The setting `sentinel` came from, for the line that says master_name is missing. */
  sentinelOptionsName?: string
  /**
   * Split a prefetch window smaller than two claims into two claims on the
   * wire while a CPU is free (tricks/claim-overlap.ts). For a consumer whose own
   * thread does the work, as the solo pool does: where tasks run in other
   * processes or threads, the split cost the pool's CPU-bound dispatcher more
   * than it gained (bench/README.md#tricks). The same
   * consumer also keeps its event loop polling while a claim's answer is due
   * (tricks/busy-poll.ts).
   */
  overlapClaims?: boolean
  /** socket_timeout, socket_connect_timeout, socket_keepalive, health_check_interval (broker_transport_options). */
  liveness?: RedisLiveness
}

export interface ResolvedRedisOptions {
  host: string
  port: number
  db: number
  username: string | undefined
  password: string | undefined
  /** TLS, from a `rediss://` URL or the setting; null for a plain connection. */
  tls: TlsPlan | null
  /** A sentinel:// URL's Sentinels and master (host and port are then its first Sentinel's). */
  sentinel?: SentinelTarget
  /** The URL without its password, for messages. */
  displayUrl: string
  visibilityTimeout: number
  restoreIntervalMs: number
  connectTimeoutMs: number
  connectionName: string
  /** Every key and channel name, as the layout options make them. */
  keys: RedisKeys
  queueOrderStrategy: QueueOrderStrategy
  liveness?: RedisLiveness
}

function positiveNumber(value: string, name: string, url: string): number {
  const n = Number(value)
  if (!Number.isFinite(n) || n <= 0) throw new BadBrokerUrlError(`${name} must be a positive number in ${maskUrl(url)}`)
  return n
}

export function resolveRedisOptions(url: string, options: RedisTransportOptions = {}): ResolvedRedisOptions {
  if (isSentinelUrl(url)) return resolveSentinelOptions(url, options)
  const parsed = parseBrokerUrl(url)
  if (parsed.scheme !== 'redis' && parsed.scheme !== 'rediss') {
    throw new BadBrokerUrlError(`not a redis URL: ${maskUrl(url)}`)
  }
  const dbText = parsed.path.replace(/\/+$/, '')
  if (dbText !== '' && !/^\d+$/.test(dbText)) {
    throw new BadBrokerUrlError(`redis database must be a number, got '${dbText}' in ${maskUrl(url)}`)
  }
  return {
    host: parsed.hostname,
    port: parsed.port ?? 6379,
    db: dbText === '' ? 0 : Number(dbText),
    username: parsed.username,
    password: parsed.password,
    tls: tlsPlan(url, options.ssl),
    ...timings(url, new URL(url).searchParams, options, dbText === '' ? 0 : Number(dbText)),
  }
}

function timings(url: string, query: URLSearchParams, options: RedisTransportOptions, db: number) {
  const vtText = query.get('visibility_timeout')
  const visibilityTimeout =
    options.visibilityTimeout ??
    (vtText !== null ? positiveNumber(vtText, 'visibility_timeout', url) : (options.defaultVisibilityTimeout ?? 3600))
  return {
    displayUrl: maskUrl(url),
    visibilityTimeout,
    restoreIntervalMs: options.restoreIntervalMs ?? Math.min(10_000, Math.max(250, (visibilityTimeout * 1000) / 2)),
    connectTimeoutMs:
      options.connectTimeoutMs ??
      (options.liveness?.socketConnectTimeout ? Math.round(options.liveness.socketConnectTimeout * 1000) : 5000),
    ...(options.liveness ? { liveness: options.liveness } : {}),
    connectionName: options.connectionName ?? `tsq-${process.pid}`,
    keys: new RedisKeys(db, options.layout),
    queueOrderStrategy: options.layout?.queueOrderStrategy ?? 'round_robin',
  }
}

/** A sentinel:// list: the master is found through the Sentinels at each connect. */
function resolveSentinelOptions(url: string, options: RedisTransportOptions): ResolvedRedisOptions {
  // TLS through Sentinels (kombu's SentinelManagedSSLConnection) is not built: say so rather than connect in the clear.
  if (options.ssl)
    throw new BadBrokerUrlError(`${maskUrl(url)}: TLS (broker_use_ssl / redis_backend_use_ssl) is not supported with sentinel:// in tsq`)
  const target = parseSentinelUrl(url, options.sentinel, options.sentinelOptionsName)
  const first = url.split(';')[0]!.trim()
  return {
    host: target.sentinels[0]!.host,
    port: target.sentinels[0]!.port,
    db: target.db,
    username: target.username,
    password: target.password,
    tls: null,
    sentinel: target,
    ...timings(url, new URL(first).searchParams, options, target.db),
  }
}

/**
 * What any ioredis client of tsq's is given for `url`: host, port, db,
 * credentials, TLS (key files read now); for sentinel:// the Sentinels and
 * master name instead of a host to connect to.
 */
export interface RedisClientOptions {
  host: string
  port: number
  db: number
  username: string | undefined
  password: string | undefined
  tls?: ConnectionOptions
  /** Set for sentinel://: the master's name (ioredis `name`), with `sentinels` and its Sentinel options. */
  name?: string
  sentinels?: Array<{ host: string; port: number }>
}

export function redisClientOptions(
  resolved: Pick<ResolvedRedisOptions, 'host' | 'port' | 'db' | 'username' | 'password' | 'tls' | 'displayUrl' | 'sentinel'>,
): RedisClientOptions {
  const { host, port, db, username, password } = resolved
  if (resolved.sentinel) return { host, port, ...sentinelClientOptions(resolved.sentinel) }
  return {
    host,
    port,
    db,
    username,
    password,
    ...(resolved.tls ? { tls: tlsConnectOptions(resolved.tls, host, resolved.displayUrl) } : {}),
  }
}

/**
 * The same for a result backend, beat's store or the lock store: `url` with
 * its setting (redis_backend_use_ssl, or broker_use_ssl for the broker's own
 * Redis), in one place so every Redis URL reads TLS alike.
 */
export function redisUrlClientOptions(
  url: string,
  ssl?: SslSettings | boolean | null,
  sentinel?: { settings?: SentinelSettings; optionsName: string },
): RedisClientOptions {
  return redisClientOptions(resolveRedisOptions(url, { ssl, sentinel: sentinel?.settings, sentinelOptionsName: sentinel?.optionsName }))
}

/**
 * The one-line reason an ioredis client could not connect: a TLS verdict
 * when there is one (probing again after a bare reset, see probeTlsRefusal),
 * else the driver's message.
 */
export async function explainRedisConnectFailure(error: unknown, client: RedisClientOptions, lastSentinelError?: Error): Promise<string> {
  if (client.sentinels && client.name) {
    return explainSentinelFailure(error, { sentinels: client.sentinels, masterName: client.name }, lastSentinelError)
  }
  const tls = describeTlsFailure(error)
  if (tls) return tls
  if (client.tls && isTlsReset(error)) {
    const refusal = await probeTlsRefusal(client.host, client.port, client.tls)
    if (refusal) return refusal
  }
  return error instanceof Error ? error.message : String(error)
}
