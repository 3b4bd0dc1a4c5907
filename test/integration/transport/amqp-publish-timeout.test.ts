// An AMQP publish given a timeout that never reaches a broker (a silent peer
// that accepts the connection and never answers the handshake) fails at its deadline saying it was not sent, so sending it
// again is safe; a shorter timeout given after a longer one still fails first;
// close() fails what is still pending instead of leaving it hanging.
import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { describe, it } from 'node:test'
import { AmqpTransport } from '../../../src/transport/amqp/amqp-transport.js'
import { PublishTimeoutError, TransportClosedError } from '../../../src/transport/errors.js'
import { message } from './conformance/context.js'

/** Accepts connections and says nothing: an AMQP handshake there waits until its own connect timeout. */
async function silentPeer(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<import('node:net').Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => undefined)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

describe('amqp publish timeout', () => {
  it('a send that never left fails at its deadline as not sent; the shorter deadline first', async () => {
    const peer = await silentPeer()
    const t = new AmqpTransport(`amqp://guest:guest@127.0.0.1:${peer.port}//`, { separatePublisher: true })
    const order: string[] = []
    const long = t.publish('', 'q', message('long'), { timeoutMs: 5_000 }).catch((e: unknown) => {
      order.push('long')
      throw e
    })
    const short = t.publish('', 'q', message('short'), { timeoutMs: 200 }).catch((e: unknown) => {
      order.push('short')
      throw e
    })
    await assert.rejects(short, (error: unknown) => {
      assert.ok(error instanceof PublishTimeoutError, String(error))
      assert.equal(error.code, 'PUBLISH_NOT_SENT')
      assert.equal(error.mayBeDelivered, false)
      assert.match(
        error.message,
        /^publish to exchange '' key 'q' not sent within 0\.2 s \(no connection to the broker\); the message was not sent$/,
      )
      return true
    })
    assert.deepEqual(order, ['short'])
    await t.close()
    // Closed before its deadline: it fails now, as a closed transport's call does.
    await assert.rejects(long, TransportClosedError)
    await peer.close()
  })
})
