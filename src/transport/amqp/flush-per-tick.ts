// One socket write per turn of the event loop for the publishes made in it.
// amqplib hands each frame to the socket on its own (its Mux writes chunk by
// chunk from a setImmediate), and a socket to 127.0.0.1 completes each write
// at once, so a thousand sends in flight cost a thousand write syscalls.
// Corking the socket at the first publish of a turn and uncorking it from a
// setImmediate queued after amqplib's own lets Node send them as one writev.
// amqplib has no option for this; the socket is its ChannelModel's
// `connection.stream`, which has been there since 0.5.
import type { ChannelModel } from 'amqplib'
import type { Writable } from 'node:stream'

const corked = new WeakSet<Writable>()

function socketOf(conn: ChannelModel): Writable | undefined {
  const stream = (conn as unknown as { connection?: { stream?: Writable } }).connection?.stream
  return typeof stream?.cork === 'function' ? stream : undefined
}

/** Call right after a publish on `conn`: amqplib has queued its read by then, so ours runs after it. */
export function flushAtEndOfTurn(conn: ChannelModel): void {
  const socket = socketOf(conn)
  if (!socket || corked.has(socket)) return
  socket.cork()
  corked.add(socket)
  setImmediate(() => {
    corked.delete(socket)
    socket.uncork()
  })
}
