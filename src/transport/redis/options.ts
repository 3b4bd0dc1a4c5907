// `redis://[user:pass@]host[:port][/db][?visibility_timeout=N]` → connection and
// kombu transport options. The db also names the pub/sub prefix `/{db}.`.
import { BadBrokerUrlError } from '../errors.js'
import { maskUrl, parseBrokerUrl } from '../url.js'

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
}

export interface ResolvedRedisOptions {
  host: string
  port: number
  db: number
  username: string | undefined
  password: string | undefined
  tls: boolean
  visibilityTimeout: number
  restoreIntervalMs: number
  connectTimeoutMs: number
  connectionName: string
}

function positiveNumber(value: string, name: string, url: string): number {
  const n = Number(value)
  if (!Number.isFinite(n) || n <= 0) throw new BadBrokerUrlError(`${name} must be a positive number in ${maskUrl(url)}`)
  return n
}

export function resolveRedisOptions(url: string, options: RedisTransportOptions = {}): ResolvedRedisOptions {
  const parsed = parseBrokerUrl(url)
  if (parsed.scheme !== 'redis' && parsed.scheme !== 'rediss') {
    throw new BadBrokerUrlError(`not a redis URL: ${maskUrl(url)}`)
  }
  const dbText = parsed.path.replace(/\/+$/, '')
  if (dbText !== '' && !/^\d+$/.test(dbText)) {
    throw new BadBrokerUrlError(`redis database must be a number, got '${dbText}' in ${maskUrl(url)}`)
  }
  const query = new URL(url).searchParams
  const vtText = query.get('visibility_timeout')
  const visibilityTimeout =
    options.visibilityTimeout ?? (vtText !== null ? positiveNumber(vtText, 'visibility_timeout', url) : (options.defaultVisibilityTimeout ?? 3600))
  return {
    host: parsed.hostname,
    port: parsed.port ?? 6379,
    db: dbText === '' ? 0 : Number(dbText),
    username: parsed.username,
    password: parsed.password,
    tls: parsed.scheme === 'rediss',
    visibilityTimeout,
    restoreIntervalMs: options.restoreIntervalMs ?? Math.min(10_000, Math.max(250, (visibilityTimeout * 1000) / 2)),
    connectTimeoutMs: options.connectTimeoutMs ?? 5000,
    connectionName: options.connectionName ?? `tsq-${process.pid}`,
  }
}
