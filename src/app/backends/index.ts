import { resolve } from 'node:path'
import { defaultFileBrokerDir, parseBrokerUrl, type SentinelSettings, type SslSettings } from '../../transport/index.js'
import { UnsupportedBackendError, type ResultBackend } from './backend.js'

export { ChordUnsupportedError, READY, ResultTimeoutError, UnsupportedBackendError } from './backend.js'
export type { ResultBackend, StoreTarget } from './backend.js'
export { JSON_RESULTS, decodeStoredResult, encodeStoredResult } from './result-codec.js'
export type { ResultCodec } from './result-codec.js'
import type { ResultCodec } from './result-codec.js'

/**
 * `ssl`: Celery's redis_backend_use_ssl (true or its dict), for a Redis
 * backend; `sentinel`: its result_backend_transport_options (master_name,
 * sentinel_kwargs), for a sentinel:// one.
 */
export async function createResultBackend(url: string | undefined, codec?: ResultCodec, ssl?: SslSettings | boolean | null, sentinel?: SentinelSettings): Promise<ResultBackend> {
  if (!url) throw new UnsupportedBackendError('no result backend configured: pass --result-backend, or set TSQ_RESULT_BACKEND or CELERY_RESULT_BACKEND')
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
      throw new UnsupportedBackendError(`unsupported result backend: ${parsed.scheme}:// (tsq supports redis://, sentinel://, rpc:// and file://)`)
  }
}
