// The broker's own words when it closes the connection during the handshake.
// amqplib keeps them for a close after start-ok (a refused login), but a close
// in answer to connection.open (a vhost that does not exist, or that the user
// may not use) becomes `Expected ConnectionOpenOk; got <ConnectionClose
// channel:0>`, the reply text dropped. Celery prints `NOT_ALLOWED - vhost x not
// found`; so does tsq, by noting the close frame as the handshake reads it.
import connection from 'amqplib/lib/connection.js'
import defs from 'amqplib/lib/defs.js'

interface HandshakeFrame {
  id?: number
  fields?: { replyCode?: number; replyText?: string }
}

interface AmqplibConnection {
  tsqHandshakeClose?: { replyCode: number; replyText: string }
}

type FrameCallback = (err: Error | null, frame: HandshakeFrame | null) => void
type OpenCallback = (err: Error | null, ok?: unknown) => void

/** Installed once, when amqplib.ts loads amqplib. */
export function installHandshakeCloseText(): void {
  const proto = connection.Connection.prototype as unknown as {
    open(this: AmqplibConnection, fields: Record<string, unknown>, cb?: OpenCallback): unknown
    step(this: AmqplibConnection, cb: FrameCallback): unknown
    tsqHandshakeCloseInstalled?: boolean
  }
  if (proto.tsqHandshakeCloseInstalled) return
  proto.tsqHandshakeCloseInstalled = true
  // step() reads frames for the handshake alone (the open connection reads in its accept loop).
  const step = proto.step
  proto.step = function (this: AmqplibConnection, cb) {
    return step.call(this, (err, frame) => {
      if (!err && frame?.id === defs.ConnectionClose && frame.fields) {
        this.tsqHandshakeClose = { replyCode: frame.fields.replyCode ?? 0, replyText: String(frame.fields.replyText ?? '') }
      }
      cb(err, frame)
    })
  }
  const open = proto.open
  proto.open = function (this: AmqplibConnection, fields, cb) {
    return open.call(this, fields, (err, ok) => {
      const close = this.tsqHandshakeClose
      // In amqplib's own wording for the close it does report.
      if (err && close && !/with message "/.test(err.message)) {
        err = new Error(`Handshake terminated by server: ${close.replyCode} with message "${close.replyText}"`, { cause: err })
      }
      cb?.(err, ok)
    })
  }
}
