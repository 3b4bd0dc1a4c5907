// kombu 5.5's native delayed delivery ladder on a real RabbitMQ: a message
// published into it comes back to its own queue after the delay, with the same
// body, properties and headers (plus the x-death bookkeeping RabbitMQ adds when
// it dead-letters). The celery_delayed_* ladder is shared and left in place;
// each test's own queue and exchange are deleted.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { after, before, describe, it } from 'node:test'
import amqplib from '../../../src/transport/amqp/amqplib.js'
import type { Channel, ConfirmChannel, GetMessage, ChannelModel, Options } from 'amqplib'
import {
  DELAYED_DELIVERY_EXCHANGE,
  bindForDelayedDelivery,
  declareDelayedDelivery,
  delayedPublishTarget,
  delayedQueueArguments,
  levelName,
} from '../../../src/transport/amqp/delayed-delivery.js'
import { AMQP_URL, brokerSkipReason, uniqueName } from '../../helpers/brokers.js'
import { createTransport, type Headers } from '../../../src/transport/index.js'

const skip = await brokerSkipReason('amqp')

/** Headers RabbitMQ adds on dead-lettering; everything else must come back as sent. */
const DEATH_HEADER = /^x-(death|first-death-|last-death-)/

function ownHeaders(headers: Record<string, unknown> | undefined): Record<string, unknown> {
  return Object.fromEntries(Object.entries(headers ?? {}).filter(([k]) => !DEATH_HEADER.test(k)))
}

describe('amqp native delayed delivery (kombu 5.5 ladder)', { skip }, () => {
  let connection: ChannelModel
  let channel: Channel
  let confirm: ConfirmChannel
  const exchanges: string[] = []
  const queues: string[] = []

  before(async () => {
    connection = await amqplib.connect(AMQP_URL)
    channel = await connection.createChannel()
    confirm = await connection.createConfirmChannel()
    await declareDelayedDelivery(channel)
  })

  after(async () => {
    if (!connection) return
    const cleanup = await connection.createChannel()
    for (const q of queues) await cleanup.deleteQueue(q)
    // Deleting the exchange also drops its binding from celery_delayed_delivery.
    for (const e of exchanges) await cleanup.deleteExchange(e)
    await connection.close()
  })

  /** A durable queue on its own topic exchange, bound for delayed delivery as Celery 5.5's bootstep binds it. */
  async function delayedQueue(): Promise<{ exchange: string; queue: string; routingKey: string }> {
    const exchange = uniqueName('tsq-delayed-ex')
    const queue = uniqueName('tsq-delayed-q')
    const routingKey = `${uniqueName('tsq.delayed')}.key`
    exchanges.push(exchange)
    queues.push(queue)
    await channel.assertExchange(exchange, 'topic', { durable: true, autoDelete: false })
    await channel.assertQueue(queue, { durable: true, exclusive: false, autoDelete: false })
    await channel.bindQueue(queue, exchange, routingKey)
    assert.equal(await bindForDelayedDelivery(channel, exchange, routingKey, queue, 'topic'), true)
    return { exchange, queue, routingKey }
  }

  /** Polls basic.get until a message arrives or the deadline passes. */
  async function getWithin(queue: string, ms: number): Promise<GetMessage | false> {
    const deadline = Date.now() + ms
    for (;;) {
      const msg = await channel.get(queue, { noAck: true })
      if (msg || Date.now() >= deadline) return msg
      await sleep(50)
    }
  }

  function taskMessage(etaMs: number): { body: Buffer; options: Options.Publish } {
    const id = randomUUID()
    return {
      body: Buffer.from(JSON.stringify([[2, 2], {}, { callbacks: null, errbacks: null, chain: null, chord: null }])),
      options: {
        contentType: 'application/json',
        contentEncoding: 'utf-8',
        correlationId: id,
        replyTo: randomUUID(),
        deliveryMode: 2,
        priority: 0,
        headers: {
          lang: 'py',
          task: 'tests.add',
          id,
          eta: new Date(Date.now() + etaMs).toISOString(),
          retries: 0,
          small: 7,
          short: 300,
          wide: 70000,
          huge: 2 ** 40,
          negative: -5,
          timelimit: [300, 200],
          argsrepr: '(2, 2)',
          ignore_result: false,
        },
      },
    }
  }

  async function publishDelayed(delaySeconds: number, routingKey: string, msg: ReturnType<typeof taskMessage>): Promise<void> {
    const target = delayedPublishTarget(delaySeconds, routingKey)
    confirm.publish(target.exchange, target.routingKey, msg.body, msg.options)
    await confirm.waitForConfirms()
  }

  function assertSameMessage(got: GetMessage, sent: ReturnType<typeof taskMessage>): void {
    assert.deepEqual(got.content, sent.body)
    const p = got.properties
    const o = sent.options
    assert.equal(p.contentType, o.contentType)
    assert.equal(p.contentEncoding, o.contentEncoding)
    assert.equal(p.correlationId, o.correlationId)
    assert.equal(p.replyTo, o.replyTo)
    assert.equal(p.deliveryMode, o.deliveryMode)
    assert.equal(p.priority, o.priority)
    assert.deepEqual(ownHeaders(p.headers), o.headers)
  }

  it('declaring the ladder again is idempotent (same arguments, no 406)', async () => {
    await declareDelayedDelivery(channel)
    await declareDelayedDelivery(channel)
    // A refused redeclare would have closed the channel; it still answers.
    await channel.checkExchange(DELAYED_DELIVERY_EXCHANGE)
    for (const level of [0, 21, 22, 27]) await channel.checkQueue(levelName(level))
  })

  it('a 3 s delay: not there at 1 s, there by 10 s, body/properties/headers unchanged', async () => {
    const { queue, routingKey } = await delayedQueue()
    const sent = taskMessage(3000)
    const start = Date.now()
    await publishDelayed(3, routingKey, sent)

    await sleep(Math.max(0, start + 1000 - Date.now()))
    assert.equal(await channel.get(queue, { noAck: true }), false, 'arrived before 1 s')

    const got = await getWithin(queue, start + 10_000 - Date.now())
    const elapsed = Date.now() - start
    assert.ok(got, 'not delivered within 10 s')
    assert.ok(elapsed >= 2500, `delivered after ${elapsed} ms, expected about 3000`)
    assertSameMessage(got, sent)
    // The delivery names the last dead-letter exchange, not the queue's own
    // exchange it was routed through, and keeps the bit-prefixed key.
    assert.equal(got.fields.exchange, DELAYED_DELIVERY_EXCHANGE)
    assert.equal(got.fields.routingKey, delayedPublishTarget(3, routingKey).routingKey)
    // 3 = 0b11: it waited in levels 1 (2 s) and 0 (1 s), and nowhere else.
    const deaths = (got.properties.headers?.['x-death'] ?? []) as { queue: string; reason: string }[]
    assert.deepEqual(deaths.map((d) => d.queue).sort(), [levelName(0), levelName(1)])
    assert.ok(deaths.every((d) => d.reason === 'expired'))
  })

  it("the transport's publishDelayed keeps the whole delay on a queue's first use (the binding's round trip is not a second off)", async () => {
    const queue = uniqueName('tsq-delayed-first')
    queues.push(queue)
    const transport = await createTransport(AMQP_URL)
    await transport.connect()
    try {
      await transport.declareQueue({ name: queue, durable: true, exclusive: false, autoDelete: false })
      const sent = taskMessage(3000)
      const start = Date.now()
      // The first delayed publish to this queue binds it to the ladder first: a few ms, which must not
      // turn a 3 s delay into 2 s (the whole seconds the ladder counts).
      await transport.publishDelayed!(
        queue,
        {
          body: sent.body,
          properties: {
            contentType: 'application/json',
            contentEncoding: 'utf-8',
            headers: sent.options.headers as Headers,
            deliveryMode: 2,
            priority: 0,
          },
        },
        3,
      )
      await sleep(Math.max(0, start + 2400 - Date.now()))
      assert.equal(await channel.get(queue, { noAck: true }), false, 'back before 2.4 s of a 3 s delay')
      const got = await getWithin(queue, start + 10_000 - Date.now())
      assert.ok(got, 'not delivered within 10 s')
      assert.deepEqual(got.content, sent.body)
    } finally {
      await transport.close()
    }
  })

  it('a 0 s delay is delivered promptly, without touching a delay queue', async () => {
    const { queue, routingKey } = await delayedQueue()
    const sent = taskMessage(0)
    const start = Date.now()
    await publishDelayed(0, routingKey, sent)
    const got = await getWithin(queue, 1000)
    assert.ok(got, `not delivered within 1 s`)
    assert.ok(Date.now() - start < 1000)
    assertSameMessage(got, sent)
    assert.equal(got.properties.headers?.['x-death'], undefined)
    assert.equal(got.fields.exchange, 'celery_delayed_27')
  })

  it("an undelayed publish to the queue's exchange still arrives exactly once", async () => {
    const { exchange, queue, routingKey } = await delayedQueue()
    const sent = taskMessage(0)
    confirm.publish(exchange, routingKey, sent.body, sent.options)
    await confirm.waitForConfirms()
    const got = await getWithin(queue, 2000)
    assert.ok(got)
    assertSameMessage(got, sent)
    await sleep(200)
    assert.equal(await channel.get(queue, { noAck: true }), false, 'delivered twice (two bindings matched)')
  })

  it('a direct exchange is skipped, as kombu skips it', async () => {
    const exchange = uniqueName('tsq-delayed-direct')
    exchanges.push(exchange)
    await channel.assertExchange(exchange, 'direct', { durable: true, autoDelete: false })
    assert.equal(await bindForDelayedDelivery(channel, exchange, 'k', 'unused', 'direct'), false)
  })

  it('RabbitMQ accepts the quorum variant of the arguments', async () => {
    // The shared ladder already exists as classic, so check the quorum
    // argument set on throwaway queues with the same arguments.
    const probe = await connection.createChannel()
    try {
      for (const level of [0, 27]) {
        const name = uniqueName('tsq-delayed-quorum')
        await probe.assertQueue(name, {
          durable: true,
          exclusive: false,
          autoDelete: false,
          arguments: delayedQueueArguments(level, 'quorum'),
        })
        await probe.deleteQueue(name)
      }
    } finally {
      await probe.close()
    }
  })
})
