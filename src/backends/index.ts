// Result backends (Celery's result stores): one ResultBackend contract and a
// store per kind (redis/sentinel, file, rpc, db+ SQL, django-db), opened by
// URL. The worker writes outcomes here, the app and the CLI read them. Sits on
// config/ (backend settings) and transport/ (URLs, connections); drivers load
// on first use.
import { resolve } from 'node:path'
import { defaultFileBrokerDir, parseBrokerUrl, type RedisLiveness, type SentinelSettings, type SslSettings } from '../transport/index.js'
import { backendSentinelFromConf, backendSslFromConf, readLiveness } from '../config/index.js'
import { UnsupportedBackendError, type ResultBackend } from './backend.js'
import { requireSqlDriver } from './sql-client.js'

export { READY, ResultTimeoutError, UnsupportedBackendError, pollUntilReady } from './backend.js'
export type { ResultBackend, StoreTarget } from './backend.js'
export { decodeKeptMessage, encodeKeptMessage, KEPT_MAX, KEPT_MAX_BODY_BYTES, KEPT_TTL_SECONDS } from './failed/index.js'
export type { FailedStore, KeptMessage } from './failed/index.js'
export { JSON_RESULTS, decodeStoredResult, encodeStoredResult } from './result-codec.js'
export type { ResultCodec } from './result-codec.js'
import type { ResultCodec } from './result-codec.js'
import { databaseOptionsFromConf, type DatabaseOptions } from './database-backend.js'
export { databaseOptionsFromConf } from './database-backend.js'
export type { DatabaseOptions } from './database-backend.js'
// rpc:// needs the app's producer connection and reply queue: the app opens it (App.backend()), not createResultBackend.
export { RpcResultBackend } from './rpc-backend.js'
// The SQL client the db+ and django-db backends share, for beat's django store too; its drivers load on first use.
export { DatabaseUrlError, isMissingTable, openSqlClient, parseSqlalchemyUrl, qualified, requireSqlDriver } from './sql-client.js'
export type { Dialect, ParsedSqlUrl, Row, SqlClient, SqlClientOptions } from './sql-client.js'

/** What a backend takes from the app's settings besides its URL; each kind reads its own part. */
export interface BackendOptions {
  /** result_serializer/result_compression, for the key-value backends (JSON when absent). */
  codec?: ResultCodec
  /** redis_backend_use_ssl (true or its dict), for a Redis backend. */
  ssl?: SslSettings | boolean | null
  /** result_backend_transport_options (master_name, sentinel_kwargs), for a sentinel:// one. */
  sentinel?: SentinelSettings
  /** The database_* settings, for `db+` and `django-db`. */
  database?: DatabaseOptions
  /** redis_socket_timeout, redis_socket_connect_timeout, redis_socket_keepalive, redis_backend_health_check_interval. */
  liveness?: RedisLiveness
  /** Told when a Redis backend's connection is lost (with why) and when it is back, for a worker's log. */
  onConnection?: (event: 'lost' | 'restored', line: string) => void
}

/** The Redis backend's liveness settings (refused values are said at start-up by settings.ts; here they are left out). */
export function backendLivenessFromConf(conf: Record<string, unknown>): RedisLiveness {
  return readLiveness(
    {
      socket_timeout: conf.redis_socket_timeout,
      socket_connect_timeout: conf.redis_socket_connect_timeout,
      socket_keepalive: conf.redis_socket_keepalive,
      health_check_interval: conf.redis_backend_health_check_interval,
    },
    {
      socket_timeout: 'redis_socket_timeout',
      socket_connect_timeout: 'redis_socket_connect_timeout',
      socket_keepalive: 'redis_socket_keepalive',
      health_check_interval: 'redis_backend_health_check_interval',
    },
  ).liveness
}

/**
 * The settings part of BackendOptions, built once from a conf, so every
 * opener of a backend (worker, client, `tsq result`, the dashboard) passes
 * the same ones.
 */
export function backendOptionsFromConf(conf: Record<string, unknown>): Omit<BackendOptions, 'codec'> {
  return {
    ssl: backendSslFromConf(conf),
    sentinel: backendSentinelFromConf(conf),
    database: databaseOptionsFromConf(conf),
    liveness: backendLivenessFromConf(conf),
  }
}

export async function createResultBackend(url: string | undefined, options: BackendOptions = {}): Promise<ResultBackend> {
  const { codec, ssl, sentinel, database, liveness, onConnection } = options
  if (!url)
    throw new UnsupportedBackendError(
      'no result backend configured: pass --result-backend, or set TSQ_RESULT_BACKEND or CELERY_RESULT_BACKEND',
    )
  if (url === 'django-db') {
    // django-celery-results names no database in the backend setting: Django's own is used. tsq takes it as a URL.
    const { DjangoResultBackend } = await import('./django-backend.js')
    const databaseUrl = database?.url ?? process.env.DATABASE_URL
    const backend = new DjangoResultBackend(databaseUrl)
    // The driver is checked up front (not the connection): a missing one stops a worker at start.
    await requireSqlDriver(databaseUrl!)
    return backend
  }
  if (/^db\+/i.test(url)) {
    const { DatabaseResultBackend } = await import('./database-backend.js')
    const backend = new DatabaseResultBackend(url.slice(3), database)
    await requireSqlDriver(url.slice(3))
    return backend
  }
  const parsed = parseBrokerUrl(url)
  switch (parsed.scheme) {
    case 'redis':
    case 'rediss': {
      const { RedisResultBackend } = await import('./redis-backend.js')
      return new RedisResultBackend(url, codec, ssl, undefined, liveness, onConnection)
    }
    case 'sentinel': {
      const { RedisResultBackend } = await import('./redis-backend.js')
      return new RedisResultBackend(url, codec, ssl, sentinel ?? {}, liveness, onConnection)
    }
    case 'file':
    case 'filesystem': {
      const { FileResultBackend } = await import('./file-backend.js')
      const backend = new FileResultBackend(parsed.path === '' ? defaultFileBrokerDir() : resolve(parsed.path))
      // Checked up front, as Celery's FilesystemBackend tests its folder: an unsafe folder stops a worker at start.
      await backend.ready()
      return backend
    }
    case 'rpc':
      throw new UnsupportedBackendError(
        'rpc:// results go only to the client that sent the task; read them with that client (or use a redis:// backend)',
      )
    default:
      throw new UnsupportedBackendError(
        `unsupported result backend: ${parsed.scheme}:// (tsq supports redis://, sentinel://, rpc://, file://, db+<sqlalchemy-url> and django-db)`,
      )
  }
}
