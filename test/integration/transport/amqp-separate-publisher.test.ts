// The AMQP transport as a worker opens it (separatePublisher: publishes on a
// connection of their own, so a broker alarm cannot block its acks): the whole
// transport contract holds, confirmed and unconfirmed publishes and timed ones
// arrive on a consumer of the other connection, and losing either connection
// loses no publish.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { after, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { AmqpTransport } from '../../../src/transport/amqp/amqp-transport.js'
import type { Delivery } from '../../../src/transport/transport.js'
import { AMQP_URL, brokerSkipReason, uniqueName, waitFor } from '../../helpers/brokers.js'
import { message } from './conformance/context.js'
import { describeTransportConformance } from './conformance/index.js'
import { killAmqpConnections } from './conformance/kill-connections.js'

const skip = await brokerSkipReason('amqp')
const run = promisify(execFile)

describeTransportConformance('amqp (separate publisher)', async () => new AmqpTransport(AMQP_URL, { separatePublisher: true }), {
  kind: 'amqp',
  killConnections: () => killAmqpConnections(),
  crashUrl: AMQP_URL,
  skip,
})

/** This process's connections to the broker, by name. */
async function connectionNames(prefix: string): Promise<string[]> {
  const { stdout } = await run('rabbitmqctl', ['-q', '--no-table-headers', 'list_connections', 'client_properties'])
  return [...stdout.matchAll(/\{"connection_name","([^"]*)"\}/g)].map((m) => m[1]!).filter((n) => n.startsWith(prefix))
}

describe('amqp separate publisher', { skip }, () => {
  const transports: AmqpTransport[] = []
  after(async () => {
    for (const t of transports) await t.close().catch(() => undefined)
  })

  it('publishes confirmed, unconfirmed and timed on its own connection, consumed and acked on the other', async () => {
    const t = new AmqpTransport(AMQP_URL, { separatePublisher: true })
    transports.push(t)
    await t.connect()
    const queue = uniqueName('tsq-sep-pub')
    await t.declareQueue({ name: queue, durable: false, exclusive: false, autoDelete: true })
    const got: string[] = []
    await t.consume(
      queue,
      (d: Delivery) => {
        got.push(d.body.toString())
        return d.ack()
      },
      { prefetch: 5 },
    )
    const sends: Promise<void>[] = []
    for (let i = 0; i < 20; i++) {
      sends.push(t.publish('', queue, message(`c${i}`)))
      sends.push(t.publish('', queue, message(`u${i}`), { confirm: false }))
      sends.push(t.publish('', queue, message(`t${i}`), { timeoutMs: 10_000 }))
    }
    await Promise.all(sends)
    await waitFor(() => got.length === 60, { timeoutMs: 10_000, what: '60 deliveries' })
    assert.deepEqual(new Set(got).size, 60)
    // Two connections: the consumer's, and `-publish`.
    const names = await connectionNames(t.connectionName)
    assert.deepEqual(names.sort(), [t.connectionName, `${t.connectionName}-publish`])
    assert.equal(t.blockedReason, null)
  })

  it('publishes again after its publishing connection is dropped, and after the consumer connection is', async () => {
    const t = new AmqpTransport(AMQP_URL, { separatePublisher: true })
    transports.push(t)
    await t.connect()
    const queue = uniqueName('tsq-sep-pub-drop')
    await t.declareQueue({ name: queue, durable: false, exclusive: false, autoDelete: false })
    const got: string[] = []
    await t.consume(queue, (d: Delivery) => {
      got.push(d.body.toString())
      return d.ack()
    })
    await t.publish('', queue, message('before'))
    await killAmqpConnections(`${t.connectionName}-publish`)
    await waitFor(async () => (await connectionNames(`${t.connectionName}-publish`)).length === 0, {
      timeoutMs: 10_000,
      what: 'the publishing connection gone',
    })
    await t.publish('', queue, message('after publisher drop'), { timeoutMs: 10_000 })
    await killAmqpConnections(t.connectionName)
    await t.publish('', queue, message('after both'))
    await waitFor(() => got.includes('after both') && got.includes('after publisher drop') && got.includes('before'), {
      timeoutMs: 20_000,
      what: 'all three',
    })
    await t.deleteQueue(queue)
  })
})
