// When every frame amqplib was given is in the kernel: what an exiting
// process waits for after its Connection.Close, instead of the broker's
// Close-Ok (close({ exiting })). amqplib says nothing of it: frames wait in
// each channel's buffer stream until its Mux, the connection's `muxer`, writes
// them to the socket from a setImmediate; the socket may then hold them until
// the kernel takes them. Both are there since amqplib 0.5 (batch-writes.ts
// relies on the same Mux).
import type { ChannelModel } from 'amqplib'
import type { Readable, Writable } from 'node:stream'

interface Internals {
  muxer?: { out?: Writable; scheduledRead?: boolean; blocked?: boolean }
  channels?: Array<{ buffer?: Readable } | null>
}

/** Resolves once no frame waits in amqplib or in the socket, or after `ms` (a dead socket never drains). */
export function framesWritten(conn: ChannelModel, ms = 1000): Promise<void> {
  const internals = (conn as unknown as { connection?: Internals }).connection
  const mux = internals?.muxer
  const socket = mux?.out
  const pending = (): boolean =>
    Boolean(mux!.scheduledRead || mux!.blocked || socket!.writableLength > 0 || internals!.channels?.some((ch) => (ch?.buffer?.readableLength ?? 0) > 0))
  // Internals not as expected: report nothing written, so the caller waits for the real close.
  if (!mux || !socket || typeof socket.writableLength !== 'number') return new Promise(() => undefined)
  const deadline = Date.now() + ms
  return new Promise((resolve) => {
    const check = (): void => {
      if (!pending() || Date.now() > deadline) resolve()
      else setImmediate(check)
    }
    setImmediate(check)
  })
}
