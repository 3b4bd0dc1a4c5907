// What the Redis transport says of its connections and loops. Its connections
// (cmd, brpop, sub) each reconnect on their own, but the transport speaks as
// one: connection:lost when the first goes down, that one's retries, and
// connection:restored once all are back. A loop failure that lasts is said
// once, then once a minute.
import type { EventEmitter } from 'node:events'
import { classifyRedisError, isConnectionError } from './classify-error.js'
import type { ConnectionRole, ConnectionWatcher } from './connections.js'

/** How often a claim loop failure that lasts is reported again. */
const LOOP_FAILURE_REPEAT_MS = 60_000

export class RedisHealth {
  private readonly down = new Set<ConnectionRole>()
  /** The connection whose reconnect attempts are reported (connection:retry). */
  private retrySpeaker: ConnectionRole | undefined
  /** When each loop failure was last said, by its message. */
  private readonly loopFailures = new Map<string, number>()

  constructor(
    private readonly events: EventEmitter,
    private readonly displayUrl: string,
    /** Said only while the transport is open: closing drops connections on purpose. */
    private readonly isOpen: () => boolean,
  ) {}

  readonly watcher: ConnectionWatcher = {
    up: (role) => {
      const wasDown = this.down.size > 0
      this.down.delete(role)
      if (wasDown && this.down.size === 0 && this.isOpen()) this.events.emit('connection:restored')
    },
    down: (role, error) => {
      if (!this.isOpen()) return
      const wasUp = this.down.size === 0
      this.down.add(role)
      if (wasUp) {
        this.retrySpeaker = role
        this.events.emit('connection:lost', classifyRedisError(error, `${role} connection lost`, this.displayUrl))
      }
    },
    // Every connection retries on its own; the one that went down first speaks for them, one line per attempt.
    retry: (role, attempt, error, delayMs) => {
      if (!this.isOpen() || role !== this.retrySpeaker || !this.down.has(role)) return
      this.events.emit('connection:retry', { url: this.displayUrl, reason: error.message, attempt, delayMs, failover: false })
    },
  }

  /**
   * A claim, BRPOP or idle wait that failed other than by the connection
   * (the watcher reports that): the loop retries with a back-off, and the
   * operator is told, once, then once a minute while the same failure lasts.
   * A claim script Redis refuses (scripting off, OOM under maxmemory) otherwise
   * left a worker taking nothing, silently. A visibility pass that Redis
   * refuses is said the same way.
   */
  loopFailed(error: unknown, doing = 'taking messages'): void {
    if (!this.isOpen() || isConnectionError(error)) return
    const err = classifyRedisError(error, doing, this.displayUrl)
    const now = Date.now()
    // By message: a refused claim and a refused restore that both last (a queue's key of another type) are each said once a minute, not each time the other was.
    const said = this.loopFailures.get(err.message)
    if (said !== undefined && now - said < LOOP_FAILURE_REPEAT_MS) return
    for (const [message, at] of this.loopFailures) if (now - at >= LOOP_FAILURE_REPEAT_MS) this.loopFailures.delete(message)
    this.loopFailures.set(err.message, now)
    this.emitError(err)
  }

  /** An error with no caller to throw to: to the 'error' listeners, or a process warning when there are none. */
  readonly emitError = (error: unknown): void => {
    const err = error instanceof Error ? error : new Error(String(error))
    if (this.events.listenerCount('error') > 0) this.events.emit('error', err)
    else process.emitWarning(`redis transport: ${err.message}`)
  }
}
