// The one way tsq loads amqplib: with its field-table codec replaced (see
// install-codec.ts and field-table.ts). Import amqplib from here, never directly.
import './install-codec.js'
import amqp from 'amqplib'
import defs from 'amqplib/lib/defs.js'
import { installHandshakeCloseText } from './connection/handshake-close.js'
import { installHeartbeatOff } from './connection/heartbeat.js'

/**
 * Proves the replacement took: a header of 300 must go out as py-amqp's `I`
 * (signed 32-bit), where amqplib's own codec writes `s`, which Python reads as
 * a string. It fails when some module loaded amqplib before this one.
 */
function assertCodecInstalled(): void {
  const frame: Buffer = defs.encodeProperties(defs.BasicProperties, 1, 0, { headers: { n: 300 } })
  const field = frame.indexOf(Buffer.from([1, 0x6e])) // key length 1, 'n'
  if (field === -1 || frame[field + 2] !== 0x49) {
    throw new Error("amqplib was loaded before tsq's field-table codec was installed: import it through src/transport/amqp/amqplib.ts")
  }
}

assertCodecInstalled()
installHeartbeatOff()
installHandshakeCloseText()

export default amqp
