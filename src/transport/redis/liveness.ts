// How a Redis connection of tsq's notices a dead path, from kombu's and
// redis-py's options: socket_timeout (a command with no reply for that long
// ends the socket), socket_connect_timeout, socket_keepalive, and
// health_check_interval (a PING every interval, on every connection, pub/sub
// and blocking ones included, that must answer within the interval, or within
// socket_timeout when that is shorter). A connection ended so is reconnected
// by ioredis; the health check is what notices a silent path on a connection
// that sends nothing (a subscriber, an idle pool), where socket_timeout alone
// never fires.
import type { Redis } from 'ioredis'

/** kombu's DEFAULT_HEALTH_CHECK_INTERVAL, seconds: with no answer due within it, a dead path is noticed in under a minute. */
export const DEFAULT_HEALTH_CHECK_INTERVAL_S = 25

export interface RedisLiveness {
  /** socket_timeout, seconds; null/undefined: none. */
  socketTimeout?: number | null
  /** socket_connect_timeout, seconds: the TCP connect and the handshake after it. */
  socketConnectTimeout?: number | null
  /** socket_keepalive: false turns TCP keep-alive off; unset keeps it on (ioredis's default). */
  socketKeepalive?: boolean | null
  /** health_check_interval, seconds; 0 turns the PING off; unset: 25. */
  healthCheckInterval?: number | null
}

/** The ioredis options for `liveness`; `blockingS` is added to the socket timeout of a connection that blocks that long by design (BRPOP). */
export function livenessClientOptions(liveness: RedisLiveness | undefined, blockingS = 0): { socketTimeout?: number; keepAlive?: number } {
  const out: { socketTimeout?: number; keepAlive?: number } = {}
  const t = liveness?.socketTimeout
  if (typeof t === 'number' && t > 0) out.socketTimeout = Math.round((t + blockingS) * 1000)
  // ioredis: a number turns keep-alive on with that initial delay (0: the OS's); undefined leaves it off.
  if (liveness?.socketKeepalive !== false) out.keepAlive = 0
  return out
}

/** The health check's period and deadline, ms; null when it is off. */
export function healthCheckTimings(liveness: RedisLiveness | undefined): { everyMs: number; deadlineMs: number } | null {
  const interval = liveness?.healthCheckInterval ?? DEFAULT_HEALTH_CHECK_INTERVAL_S
  if (!(interval > 0)) return null
  const t = liveness?.socketTimeout
  const deadline = typeof t === 'number' && t > 0 ? Math.min(t, interval) : interval
  return { everyMs: Math.round(interval * 1000), deadlineMs: Math.round(deadline * 1000) }
}

interface Stream {
  destroy(err?: Error): void
}

/**
 * Keeps `conn` honest: a PING every health-check interval while it is ready,
 * and a handshake that does not finish within the connect timeout, each end
 * the socket with a one-line reason (ioredis then reconnects as after any
 * drop). `blockingS`: how long a command of this connection blocks by design. Returns the stop function; it also stops when the client ends.
 */
export function watchLiveness(conn: Redis, liveness: RedisLiveness | undefined, connectTimeoutMs: number, blockingS = 0): () => void {
  const checks = healthCheckTimings(liveness)
  // A PING on a blocking connection waits behind the blocking command's own wait.
  const timings = checks && { everyMs: checks.everyMs, deadlineMs: checks.deadlineMs + blockingS * 1000 }
  const kill = (reason: string): void => {
    const stream = (conn as unknown as { stream?: Stream }).stream
    stream?.destroy(new Error(reason))
  }
  let pinging = false
  let deadline: NodeJS.Timeout | undefined
  const check = (): void => {
    if (!timings || pinging || conn.status !== 'ready') return
    pinging = true
    const stream = (conn as unknown as { stream?: Stream }).stream
    deadline = setTimeout(() => {
      // Only the socket the PING went out on: a reconnect meanwhile has its own.
      if ((conn as unknown as { stream?: Stream }).stream === stream)
        kill(`no answer to the health-check PING within ${timings.deadlineMs / 1000} s`)
    }, timings.deadlineMs)
    deadline.unref()
    conn
      .ping()
      .catch(() => undefined)
      .finally(() => {
        clearTimeout(deadline)
        pinging = false
      })
  }
  const timer = timings ? setInterval(check, timings.everyMs) : undefined
  timer?.unref()
  // The TCP connect has ioredis's connectTimeout; the handshake after it (AUTH, SELECT, the ready check) has none of its own.
  let handshake: NodeJS.Timeout | undefined
  const onConnect = (): void => {
    clearTimeout(handshake)
    const stream = (conn as unknown as { stream?: Stream }).stream
    handshake = setTimeout(() => {
      if (conn.status !== 'ready' && (conn as unknown as { stream?: Stream }).stream === stream)
        kill(`no answer to the handshake within ${connectTimeoutMs / 1000} s`)
    }, connectTimeoutMs)
    handshake.unref()
  }
  const onReady = (): void => clearTimeout(handshake)
  // ioredis 5 leaves its socket_timeout timer armed when the socket closes (a
  // refused TLS handshake), which keeps a finished CLI alive for socket_timeout.
  const onClose = (): void => {
    const internals = conn as unknown as { socketTimeoutTimer?: NodeJS.Timeout }
    if (internals.socketTimeoutTimer === undefined) return
    clearTimeout(internals.socketTimeoutTimer)
    internals.socketTimeoutTimer = undefined
  }
  conn.on('connect', onConnect)
  conn.on('ready', onReady)
  conn.on('close', onClose)
  const stop = (): void => {
    if (timer) clearInterval(timer)
    clearTimeout(handshake)
    clearTimeout(deadline)
    conn.off('connect', onConnect)
    conn.off('ready', onReady)
    onClose()
    conn.off('close', onClose)
  }
  conn.once('end', stop)
  return stop
}
