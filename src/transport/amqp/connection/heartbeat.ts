// AMQP heartbeats as Celery's worker runs them. Two things amqplib does not:
// a requested heartbeat of 0 turns heartbeats off (amqplib's negotiation takes
// the server's value instead, where py-amqp sends 0 in tune-ok), and a dead
// path is noticed as py-amqp's heartbeat_tick notices it: checked every
// heartbeat / broker_heartbeat_checkrate seconds, failed once nothing at all
// was received for two heartbeats ("Too many heartbeats missed").
import '../install-codec.js'
import type { ChannelModel } from 'amqplib'
import connection from 'amqplib/lib/connection.js'
import defs from 'amqplib/lib/defs.js'

interface AmqplibConnection {
  heartbeat?: number
  stream?: { bytesRead?: number; destroy?: (err?: Error) => void }
  onSocketError?: (err: Error) => void
  tsqNoHeartbeat?: boolean
}

/** Installed once, when amqplib.ts loads amqplib. */
export function installHeartbeatOff(): void {
  const proto = connection.Connection.prototype as unknown as {
    open(this: AmqplibConnection, fields: Record<string, unknown>, cb?: unknown): unknown
    sendMethod(this: AmqplibConnection, channel: number, method: number, fields: Record<string, unknown>): unknown
    tsqHeartbeatOffInstalled?: boolean
  }
  if (proto.tsqHeartbeatOffInstalled) return
  proto.tsqHeartbeatOffInstalled = true
  const open = proto.open
  proto.open = function (this: AmqplibConnection, fields, cb) {
    this.tsqNoHeartbeat = fields.heartbeat === 0
    return open.call(this, fields, cb)
  }
  const sendMethod = proto.sendMethod
  // tune-ok's fields are the negotiated options amqplib then starts its heart with: 0 there means none.
  proto.sendMethod = function (this: AmqplibConnection, channel, method, fields) {
    if (this.tsqNoHeartbeat && method === defs.ConnectionTuneOk) fields.heartbeat = 0
    return sendMethod.call(this, channel, method, fields)
  }
}

/** The heartbeat the connection settled on with the broker, seconds (0: none). */
export function negotiatedHeartbeat(conn: ChannelModel): number {
  return (conn as unknown as { connection?: AmqplibConnection }).connection?.heartbeat ?? 0
}

/**
 * py-amqp's heartbeat_tick on a timer: every heartbeat / rate seconds, any
 * byte received counts as a heartbeat; none for 2 × heartbeat ends the
 * connection with "Too many heartbeats missed", which the transport takes as
 * a lost connection. Returns the stop function (also called on close).
 */
export function watchHeartbeats(conn: ChannelModel, rate: number, now: () => number = Date.now): () => void {
  const c = (conn as unknown as { connection?: AmqplibConnection }).connection
  const heartbeat = c?.heartbeat ?? 0
  if (!c || heartbeat <= 0 || !c.stream) return () => undefined
  const stream = c.stream
  let seen = stream.bytesRead ?? 0
  let lastReceived = now()
  const tickMs = (heartbeat * 1000) / (rate > 0 ? rate : 2)
  let stopped = false
  const timer = setInterval(() => {
    if (stopped) return
    const read = stream.bytesRead ?? 0
    if (read !== seen) {
      seen = read
      lastReceived = now()
      return
    }
    if (now() - lastReceived <= 2 * heartbeat * 1000) return
    stop()
    const err = new Error(
      `Too many heartbeats missed (nothing received for ${Math.round((now() - lastReceived) / 1000)} s, heartbeat ${heartbeat} s)`,
    )
    // As amqplib's own socket errors go: 'error', then 'close' with the error; the dead socket is not waited on.
    c.onSocketError?.(err)
    stream.destroy?.()
  }, tickMs)
  timer.unref()
  const stop = (): void => {
    stopped = true
    clearInterval(timer)
  }
  conn.once('close', stop)
  return stop
}
