// A delivery whose broker has taken it back says so (isLive() false)
// and the transport tells its listeners ('deliveries:lost'), so a worker drops
// the copy it holds instead of running it beside the broker's redelivery:
// on AMQP when the channel or connection goes, on Redis when a
// visibility-timeout pass restores it.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { createTransport } from '../../../src/transport/registry.js'
import type { Delivery, DeliveriesLost, Transport } from '../../../src/transport/index.js'
import { ackTimeoutOf } from '../../../src/transport/amqp/classify-error.js'
import { AMQP_URL, brokerSkipReason, REDIS_URL, uniqueName, waitFor } from '../../helpers/brokers.js'
import { killAmqpConnections } from './conformance/kill-connections.js'

const amqpSkip = await brokerSkipReason('amqp')
const redisSkip = await brokerSkipReason('redis')
const open: Transport[] = []

after(async () => {
  for (const t of open.splice(0)) await t.close().catch(() => undefined)
})

const message = (body: string) => ({
  body: Buffer.from(body),
  properties: { contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, deliveryMode: 2 as const, priority: 0 },
})

async function heldAndLost(url: string, loseIt: (t: Transport) => Promise<void>): Promise<void> {
  const t = await createTransport(url)
  open.push(t)
  await t.connect()
  const queue = uniqueName('tsq-liveness')
  await t.declareQueue({ name: queue, durable: false, exclusive: false, autoDelete: false })
  const lost: DeliveriesLost[] = []
  t.on('deliveries:lost', (l) => lost.push(l))
  const got: Delivery[] = []
  await t.consume(queue, (d) => void got.push(d), { prefetch: 4 })
  await t.publish('', queue, message('held'))
  await waitFor(() => got.length >= 1, { timeoutMs: 10_000, what: 'first delivery' })
  const first = got[0]!
  assert.equal(first.isLive?.(), true)
  await loseIt(t)
  await waitFor(() => lost.some((l) => l.queue === queue), { timeoutMs: 30_000, what: 'deliveries:lost' })
  assert.equal(first.isLive?.(), false, 'the held copy is no longer live')
  await waitFor(() => got.length >= 2, { timeoutMs: 30_000, what: 'the redelivery' })
  const again = got[got.length - 1]!
  assert.equal(again.body.toString(), 'held')
  assert.equal(again.redelivered, true)
  assert.equal(again.isLive?.(), true)
  // Settling the stale copy must not touch the broker's new one.
  await first.ack()
  await again.ack()
  await t.deleteQueue(queue)
}

describe('delivery liveness (issue 32)', () => {
  it('[RabbitMQ] a forced connection close takes back what the consumer held', { skip: amqpSkip, timeout: 60_000 }, async () => {
    await heldAndLost(AMQP_URL, () => killAmqpConnections())
  })

  it('[Redis] a visibility-timeout restore takes back what the consumer held', { skip: redisSkip, timeout: 60_000 }, async () => {
    await heldAndLost(`${REDIS_URL}?visibility_timeout=1`, async () => undefined)
  })

  it("reads RabbitMQ's consumer-timeout close, and only that, as an ack timeout", () => {
    const close = new Error(
      'Channel closed by server: 406 (PRECONDITION-FAILED) with message "PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out. Timeout value used: 10000 ms. This timeout value can be configured, see consumers doc guide to learn more"',
    )
    assert.deepEqual(ackTimeoutOf(close), { ackTimeoutMs: 10_000 })
    assert.deepEqual(ackTimeoutOf(new Error('Channel closed by server: 404 (NOT-FOUND) with message "NOT_FOUND - no queue \'x\'"')), {})
    assert.deepEqual(ackTimeoutOf(null), {})
  })
})
