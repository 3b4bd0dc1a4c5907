// The transport's ioredis connections: `cmd` for ordinary commands, `brpop` for
// the blocking pop, `sub` for pub/sub. The first connect fails fast with one line;
// after that ioredis reconnects by itself with backoff.
import { Redis } from 'ioredis'
// DEBUG=ioredis:* lines with their passwords masked.
import './debug-filter.js'
import { BrokerConnectionError } from '../errors.js'
import { explainRedisConnectFailure, redisClientOptions, type ResolvedRedisOptions } from './options.js'
import { livenessClientOptions, watchLiveness } from './liveness.js'

export type ConnectionRole = 'cmd' | 'brpop' | 'sub'

/** The longest a blocking connection's command waits by design (BRPOP's 1 s), added to its socket timeout. */
const BLOCKING_S = 1

export interface ConnectionWatcher {
  up(role: ConnectionRole): void
  down(role: ConnectionRole, error: Error): void
  /** A reconnect attempt failed; the next one comes in `delayMs`. */
  retry?(role: ConnectionRole, attempt: number, error: Error, delayMs: number): void
}

export function createConnection(
  options: ResolvedRedisOptions,
  role: ConnectionRole,
  watcher: ConnectionWatcher,
): { conn: Redis; open(): Promise<void> } {
  let everReady = false
  let lastError: Error | undefined
  let lastSentinelError: Error | undefined
  let closing = false
  const clientOptions = redisClientOptions(options)
  const conn = new Redis({
    ...clientOptions,
    ...livenessClientOptions(options.liveness, role === 'brpop' ? BLOCKING_S : 0),
    connectionName: `${options.connectionName}-${role}`,
    lazyConnect: true,
    connectTimeout: options.connectTimeoutMs,
    // The blocking and pub/sub connections wait for reconnection instead of failing their one command.
    maxRetriesPerRequest: role === 'cmd' ? 10 : null,
    // A BRPOP cut by a drop is sent again after the reconnect (otherwise its promise never settles).
    autoResendUnfulfilledCommands: true,
    // No retries until the first connect worked, so an unreachable broker is reported at once.
    retryStrategy: (times) => {
      if (!everReady || closing) return null
      const delayMs = Math.min(100 * times, 2000)
      // times 1 is the drop itself; each later call follows a failed attempt.
      if (times > 1) watcher.retry?.(role, times - 1, lastError ?? new Error(`redis ${role} connection closed`), delayMs)
      return delayMs
    },
  })
  watchLiveness(conn, options.liveness, options.connectTimeoutMs, role === 'brpop' ? BLOCKING_S : 0)
  conn.on('error', (error: Error) => {
    lastError = error
  })
  // Through Sentinels: which Sentinel said what, for the first connect's one line.
  conn.on('sentinelError', (error: Error) => {
    lastSentinelError = error
  })
  conn.on('ready', () => {
    everReady = true
    watcher.up(role)
  })
  conn.on('close', () => {
    if (everReady && !closing) watcher.down(role, lastError ?? new Error(`redis ${role} connection closed`))
  })
  conn.on('end', () => {
    closing = true
  })
  const open = async (): Promise<void> => {
    let timer: NodeJS.Timeout | undefined
    try {
      await Promise.race([
        conn.connect(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${options.connectTimeoutMs} ms`)), options.connectTimeoutMs)
        }),
      ])
    } catch (error) {
      closing = true
      conn.disconnect()
      const reason = await explainRedisConnectFailure(lastError ?? error, clientOptions, lastSentinelError)
      throw new BrokerConnectionError(`cannot connect to ${options.displayUrl}: ${reason}`, {
        cause: lastError ?? error,
      })
    } finally {
      clearTimeout(timer)
    }
  }
  return { conn, open }
}

/** QUIT politely, but never wait on a dead broker longer than `ms`. */
export async function closeConnection(conn: Redis, ms = 2000): Promise<void> {
  if (conn.status === 'end') return
  if (conn.status !== 'ready') {
    conn.disconnect()
    return
  }
  let timer: NodeJS.Timeout | undefined
  await Promise.race([
    conn.quit().catch(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms)
    }),
  ])
  clearTimeout(timer)
  conn.disconnect()
}
