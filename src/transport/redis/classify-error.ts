// Sorts ioredis failures the way kombu's `get_redis_error_classes()` does:
// connection errors (reconnect and retry) versus request errors (never retried).
import { BrokerConnectionError, BrokerRequestError, TsqTransportError } from '../errors.js'
import { isDemotedMasterError } from './sentinel.js'

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
])

function errorCode(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code
    return typeof code === 'string' ? code : undefined
  }
  return undefined
}

export function isConnectionError(error: unknown): boolean {
  if (error instanceof BrokerConnectionError) return true
  if (!(error instanceof Error)) return false
  const code = errorCode(error)
  if (code && CONNECTION_CODES.has(code)) return true
  if (error.name === 'MaxRetriesPerRequestError' || error.name === 'AbortError') return true
  if (/^(NOAUTH|WRONGPASS|LOADING|MASTERDOWN)/.test(error.message)) return true
  // A master that is one no longer (a Sentinel failover): reconnect and retry, as redis-py's Sentinel connections do.
  if (isDemotedMasterError(error)) return true
  return /Connection is closed|Stream isn't writeable|connect ETIMEDOUT|Connection is in subscriber mode/i.test(error.message)
}

/**
 * The error that counts: a MULTI whose commands Redis refused as they were
 * queued fails as `EXECABORT Transaction discarded`, and ioredis keeps the
 * refusals (an OOM, a WRONGTYPE) in `previousErrors`.
 */
function rootError(error: unknown): unknown {
  const previous = (error as { previousErrors?: unknown })?.previousErrors
  if (error instanceof Error && error.message.startsWith('EXECABORT') && Array.isArray(previous) && previous[0] instanceof Error)
    return previous[0]
  return error
}

/** Redis's refusal under maxmemory with the noeviction policy (a write that would grow the data set). */
export function isOutOfMemoryError(error: unknown): boolean {
  const root = rootError(error)
  return root instanceof Error && root.message.startsWith('OOM ')
}

/** An OOM refusal in Redis's words with tsq's, else the error as it was: for stores that keep their own message prefix. */
export function sayOutOfMemory(error: unknown, where: string): unknown {
  if (!isOutOfMemoryError(error)) return error
  return new BrokerRequestError('OOM', `${where}: Redis is out of memory (maxmemory): ${(rootError(error) as Error).message}`, {
    cause: error,
  })
}

/** One line saying what failed, with the driver error kept as `cause`. */
export function classifyRedisError(error: unknown, where: string, displayUrl: string): TsqTransportError {
  if (error instanceof TsqTransportError) return error
  if (isOutOfMemoryError(error)) {
    const said = (rootError(error) as Error).message
    return new BrokerRequestError('OOM', `redis broker ${displayUrl}: ${where}: Redis is out of memory (maxmemory): ${said}`, {
      cause: error,
    })
  }
  const message = error instanceof Error ? error.message : String(error)
  if (isConnectionError(error)) {
    return new BrokerConnectionError(`redis broker ${displayUrl}: ${where}: ${message}`, { cause: error })
  }
  const code = /^([A-Z]+)\b/.exec(message)?.[1] ?? 'REDIS_ERROR'
  return new BrokerRequestError(code, `redis broker ${displayUrl}: ${where}: ${message}`, { cause: error })
}
