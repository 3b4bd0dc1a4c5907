// RabbitMQ's memory and disk alarms: connection.blocked and unblocked, said
// once per alarm whichever of the transport's connections hear it. A blocked
// connection reads no frame at all, so it cannot be closed politely either.
import type { ChannelModel } from 'amqplib'

export class BlockedConnections {
  /** Connections the broker said it blocks. */
  private readonly blocked = new Set<ChannelModel>()
  /** The reason announced (null: none). */
  private announced: string | null = null

  constructor(
    private readonly onBlocked: (reason: string) => void,
    private readonly onUnblocked: () => void,
  ) {}

  /** The broker's reason while it blocks publishing on any of the connections. */
  get reason(): string | null {
    return this.announced
  }

  watch(conn: ChannelModel): void {
    conn.on('blocked', (reason: unknown) => {
      this.blocked.add(conn)
      if (this.announced !== null) return
      this.announced = typeof reason === 'string' && reason !== '' ? reason : 'no reason given'
      this.onBlocked(this.announced)
    })
    conn.on('unblocked', () => {
      this.blocked.delete(conn)
      if (this.blocked.size === 0 && this.announced !== null) this.announceUnblocked()
    })
  }

  has(conn: ChannelModel): boolean {
    return this.blocked.has(conn)
  }

  /** The connection closed. Not unblocked: the alarm may go on; the next confirm or unblocked says so. */
  forget(conn: ChannelModel): void {
    this.blocked.delete(conn)
  }

  /** A confirm means the broker reads again: a block lost with its connection is over. */
  confirmed(): void {
    if (this.announced !== null && this.blocked.size === 0) this.announceUnblocked()
  }

  /** Closes `conn`, or drops it when blocked: closing would wait for a close-ok the broker never sends. */
  async close(conn: ChannelModel): Promise<void> {
    if (this.blocked.has(conn)) destroyConnection(conn)
    else await conn.close().catch(() => undefined)
  }

  private announceUnblocked(): void {
    this.announced = null
    this.onUnblocked()
  }
}

function destroyConnection(conn: ChannelModel): void {
  const stream = (conn as unknown as { connection?: { stream?: { destroy?: (err?: Error) => void } } }).connection?.stream
  // With an error: amqplib closes its side on the socket's 'error' (its heartbeat timer too), not on a bare 'close'.
  if (typeof stream?.destroy === 'function') stream.destroy(new Error('closed while the broker blocks the connection'))
  else void conn.close().catch(() => undefined)
}
