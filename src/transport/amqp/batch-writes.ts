// One socket write per pass of amqplib's frame multiplexer, not one per frame.
// amqplib queues every frame (a publish, an ack) on its channel's object-mode
// stream; its Mux then hands them to the socket one write() each, from a
// setImmediate, and a socket to 127.0.0.1 completes each write at once: a
// thousand publishes in flight cost a thousand write syscalls, a visible share
// of a migrate's CPU. Corking the socket around each pass makes Node send what
// the pass wrote as one writev, with nothing held past the pass.
//
// An earlier version corked at a publish and uncorked from a setImmediate of
// its own; the Mux's setImmediate is queued from a 'readable' event, a
// process.nextTick after the write, so the uncork always ran first and
// batched nothing. Wrapping the pass itself does not depend on that order.
//
// amqplib has no option for this: the Mux is its Connection's `muxer` (with
// the socket as `out`) and the pass its `_readIncoming`, both there since 0.5.
import type { ChannelModel } from 'amqplib'
import type { Writable } from 'node:stream'

interface Mux {
  out?: Writable
  _readIncoming?: () => void
}

/** Call once per connection, right after it opened. */
export function batchSocketWrites(conn: ChannelModel): void {
  const mux = (conn as unknown as { connection?: { muxer?: Mux } }).connection?.muxer
  const socket = mux?.out
  const pass = mux?._readIncoming
  if (!mux || typeof pass !== 'function' || typeof socket?.cork !== 'function') return
  mux._readIncoming = function batchedPass(this: Mux) {
    socket.cork()
    try {
      pass.call(this)
    } finally {
      socket.uncork()
    }
  }
}
