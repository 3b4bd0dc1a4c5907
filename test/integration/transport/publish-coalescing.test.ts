// Sends in flight together are written together (one pipeline per
// turn on Redis, one socket flush per turn on RabbitMQ), and each still
// resolves only once the broker has its message. Checked on the real brokers
// with a raw client: every publish that resolved is there, in order of the
// batch, priorities in kombu's sub-lists, and a close right after sends that
// nobody awaited still writes them first.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import amqplib from '../../../src/transport/amqp/amqplib.js'
import { createTransport } from '../../../src/transport/index.js'
import type { OutgoingMessage } from '../../../src/transport/transport.js'
import { AMQP_URL, REDIS_URL, brokerSkipReason, uniqueName } from '../../helpers/brokers.js'
import { deleteCeleryQueues } from '../../interop/helpers/cleanup.js'

const N = 3000

function msg(i: number, priority = 0): OutgoingMessage {
  return {
    body: Buffer.from(JSON.stringify([[i], {}, {}])),
    properties: { contentType: 'application/json', contentEncoding: 'utf-8', headers: { i }, deliveryMode: 2, priority },
  }
}

const redisSkip = await brokerSkipReason('redis')
describe('redis: concurrent publishes go out as pipelines', { skip: redisSkip }, () => {
  const queues: string[] = []
  const raw = new Redis(REDIS_URL, { lazyConnect: true })
  after(async () => {
    await deleteCeleryQueues('redis', REDIS_URL, queues)
    raw.disconnect()
  })

  it(`${N} publishes started at once all resolve, and all are in the list in the order they were made`, async () => {
    const queue = uniqueName('tsq-coalesce')
    queues.push(queue)
    const t = await createTransport(REDIS_URL)
    await t.connect()
    await t.declareQueue({ name: queue, durable: true, exclusive: false, autoDelete: false })
    await Promise.all(Array.from({ length: N }, (_, i) => t.publish('', queue, msg(i))))
    await t.close()
    const listed = (await raw.lrange(queue, 0, -1)).map((r) => (JSON.parse(r) as { headers: { i: number } }).headers.i)
    // LPUSH puts the newest at the head.
    assert.deepEqual(
      listed.reverse(),
      Array.from({ length: N }, (_, i) => i),
    )
  })

  it('priorities still land in their own sub-lists when batched together', async () => {
    const queue = uniqueName('tsq-coalesce-prio')
    queues.push(queue)
    const t = await createTransport(REDIS_URL)
    await t.connect()
    await Promise.all([t.publish('', queue, msg(1, 0)), t.publish('', queue, msg(2, 9)), t.publish('', queue, msg(3, 0))])
    await t.close()
    assert.equal(await raw.llen(queue), 2)
    assert.equal(await raw.llen(`${queue}\x06\x169`), 1)
  })

  it('close() right after sends nobody awaited writes them before it quits', async () => {
    const queue = uniqueName('tsq-coalesce-close')
    queues.push(queue)
    const t = await createTransport(REDIS_URL)
    await t.connect()
    const sent = Array.from({ length: 50 }, (_, i) => t.publish('', queue, msg(i)))
    // Let the publishes reach the batcher (they await the connection first), then close at once.
    await new Promise((r) => process.nextTick(r))
    await Promise.resolve()
    await t.close()
    const outcomes = await Promise.allSettled(sent)
    const resolved = outcomes.filter((o) => o.status === 'fulfilled').length
    assert.equal(await raw.llen(queue), resolved)
    assert.equal(resolved, sent.length)
  })
})

const amqpSkip = await brokerSkipReason('amqp')
describe('amqp: concurrent confirmed publishes flushed once per turn', { skip: amqpSkip }, () => {
  const queue = uniqueName('tsq-coalesce-amqp')
  after(async () => {
    await deleteCeleryQueues('amqp', AMQP_URL, [queue])
  })

  it(`${N} publishes started at once all resolve on their confirms, and all are in the queue`, async () => {
    const t = await createTransport(AMQP_URL)
    await t.connect()
    await t.declareQueue({ name: queue, durable: true, exclusive: false, autoDelete: false })
    await Promise.all(Array.from({ length: N }, (_, i) => t.publish('', queue, msg(i))))
    await t.close()
    const conn = await amqplib.connect(AMQP_URL)
    try {
      const ch = await conn.createChannel()
      assert.equal((await ch.checkQueue(queue)).messageCount, N)
    } finally {
      await conn.close()
    }
  })
})
