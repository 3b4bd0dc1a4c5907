// One socket write per pass of amqplib's frame multiplexer, not one per frame:
// its Mux hands each queued frame (a publish, an ack) to the socket with a
// write() of its own, a syscall each on loopback. Corking the socket around a
// pass sends what the pass wrote as one writev, holding nothing past the pass
// (bench/README.md#tricks). Wrapping the pass itself, not corking at a publish:
// the Mux's pass runs from a setImmediate that an uncork of ours would always
// precede. amqplib has no option for it: the Mux is its Connection's `muxer`,
// the socket its `out`, the pass its `_readIncoming`. Switch: TSQ_NO_BATCH_WRITES.
import type { ChannelModel } from 'amqplib'
import type { Writable } from 'node:stream'

interface Mux {
  out?: Writable
  _readIncoming?: () => void
}

/** Call once per connection, right after it opened; false when amqplib's Mux is not there to wrap. */
export function batchSocketWrites(conn: ChannelModel): boolean {
  const mux = (conn as unknown as { connection?: { muxer?: Mux } }).connection?.muxer
  const socket = mux?.out
  const pass = mux?._readIncoming
  if (!mux || typeof pass !== 'function' || typeof socket?.cork !== 'function') return false
  mux._readIncoming = function batchedPass(this: Mux) {
    socket.cork()
    try {
      pass.call(this)
    } finally {
      socket.uncork()
    }
  }
  return true
}
