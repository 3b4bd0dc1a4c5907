import { resolve } from 'node:path'
import { defaultFileBrokerDir, parseBrokerUrl, type SentinelSettings, type SslSettings } from '../../transport/index.js'
import { UnsupportedBackendError, type ResultBackend } from './backend.js'

export { ChordUnsupportedError, READY, ResultTimeoutError, UnsupportedBackendError } from './backend.js'
export type { ResultBackend, StoreTarget } from './backend.js'
export { JSON_RESULTS, decodeStoredResult, encodeStoredResult } from './result-codec.js'
export type { ResultCodec } from './result-codec.js'
import type { ResultCodec } from './result-codec.js'
import type { DatabaseOptions } from './database-backend.js'
export { databaseOptionsFromConf } from './database-backend.js'
export type { DatabaseOptions } from './database-backend.js'

/**
 * `ssl`: Celery's redis_backend_use_ssl (true or its dict), for a Redis
 * backend; `sentinel`: its result_backend_transport_options (master_name,
 * sentinel_kwargs), for a sentinel:// one; `database`: the database_*
 * settings, for a `db+` one.
 */
export async function createResultBackend(url: string | undefined, codec?: ResultCodec, ssl?: SslSettings | boolean | null, sentinel?: SentinelSettings, database?: DatabaseOptions): Promise<ResultBackend> {
  if (!url) throw new UnsupportedBackendError('no result backend configured: pass --result-backend, or set TSQ_RESULT_BACKEND or CELERY_RESULT_BACKEND')
  if (url === 'django-db') {
    // django-celery-results names no database in the backend setting: Django's own is used. tsq takes it as a URL.
    const { DjangoResultBackend } = await import('./django-backend.js')
    return new DjangoResultBackend(database?.url ?? process.env.DATABASE_URL)
  }
  if (/^db\+/i.test(url)) {
    const { DatabaseResultBackend } = await import('./database-backend.js')
    return new DatabaseResultBackend(url.slice(3), database)
  }
  const parsed = parseBrokerUrl(url)
  switch (parsed.scheme) {
    case 'redis':
    case 'rediss': {
      const { RedisResultBackend } = await import('./redis-backend.js')
      return new RedisResultBackend(url, codec, ssl)
    }
    case 'sentinel': {
      const { RedisResultBackend } = await import('./redis-backend.js')
      return new RedisResultBackend(url, codec, ssl, sentinel ?? {})
    }
    case 'file':
    case 'filesystem': {
      const { FileResultBackend } = await import('./file-backend.js')
      return new FileResultBackend(parsed.path === '' ? defaultFileBrokerDir() : resolve(parsed.path))
    }
    case 'rpc':
      throw new UnsupportedBackendError('rpc:// results go only to the client that sent the task; read them with that client (or use a redis:// backend)')
    default:
      throw new UnsupportedBackendError(`unsupported result backend: ${parsed.scheme}:// (tsq supports redis://, sentinel://, rpc://, file://, db+<sqlalchemy-url> and django-db)`)
  }
}
