import assert from 'node:assert/strict'
import { it } from 'node:test'
import { uniqueName } from '../../../helpers/brokers.js'
import { Collector, type ConformanceContext, message, pause, QUIET_MS } from './context.js'

export function basicCases(ctx: ConformanceContext): void {
  it('publishes to the default exchange and consumes with properties intact', { timeout: 60_000 }, async () => {
    const t = await ctx.open()
    const q = await ctx.queue(t)
    const headers = {
      lang: 'py',
      task: 'tasks.add',
      retries: 0,
      timelimit: [30, 20],
      shadow: null,
      ignore_result: false,
      nested: { a: 'b' },
    }
    await t.publish('', q, message('[[2, 2], {}, {}]', { headers, correlationId: 'id-1', replyTo: 'reply-oid' }))
    const got = new Collector()
    await t.consume(q, got.handler, { prefetch: 10 })
    await got.waitForCount(1)
    const d = got.deliveries[0]!
    assert.equal(d.body.toString(), '[[2, 2], {}, {}]')
    assert.equal(d.queue, q)
    assert.equal(d.exchange, '')
    assert.equal(d.routingKey, q)
    assert.equal(d.redelivered, false)
    assert.equal(typeof d.deliveryTag, 'string')
    assert.equal(d.properties.contentType, 'application/json')
    assert.equal(d.properties.contentEncoding, 'utf-8')
    assert.equal(d.properties.deliveryMode, 2)
    assert.equal(d.properties.priority, 0)
    assert.equal(d.properties.correlationId, 'id-1')
    assert.equal(d.properties.replyTo, 'reply-oid')
    assert.deepEqual(d.properties.headers, headers)
    await d.ack()
  })

  it('routes through a direct exchange by routing key only', { timeout: 60_000 }, async () => {
    const t = await ctx.open()
    const exchange = uniqueName(`tsq-conf-${ctx.opts.kind}-x`)
    await t.declareExchange({ name: exchange, type: 'direct', durable: false, autoDelete: true })
    const q = await ctx.queue(t)
    await t.bindQueue(q, exchange, 'right')
    const got = new Collector()
    await t.consume(q, got.handler, { noAck: true })
    await t.publish(exchange, 'wrong', message('wrong'))
    await t.publish(exchange, 'right', message('right'))
    await got.waitForCount(1)
    await pause(QUIET_MS)
    assert.deepEqual(got.bodies(), ['right'])
    assert.equal(got.deliveries[0]!.exchange, exchange)
    assert.equal(got.deliveries[0]!.routingKey, 'right')
  })

  it(
    'declareTopology declares exchanges, queue and bindings at once, so a publish right after is routed',
    { timeout: 60_000 },
    async (t0) => {
      const t = await ctx.open()
      if (!t.declareTopology) return t0.skip(`${ctx.opts.kind} declares one by one`)
      const fanout = uniqueName(`tsq-conf-${ctx.opts.kind}-fx`)
      const direct = uniqueName(`tsq-conf-${ctx.opts.kind}-dx`)
      const q = uniqueName(`tsq-conf-${ctx.opts.kind}`)
      ctx.track(q)
      await t.declareTopology({
        exchanges: [
          { name: fanout, type: 'fanout', durable: false, autoDelete: true },
          { name: direct, type: 'direct', durable: false, autoDelete: true },
        ],
        queue: { name: q, durable: false, exclusive: false, autoDelete: false },
        bindings: [
          { exchange: direct, routingKey: 'one' },
          { exchange: direct, routingKey: 'two' },
        ],
      })
      // Published before anyone consumes: routed by every binding, held by the queue.
      await t.publish(direct, 'one', message('one'))
      await t.publish(direct, 'two', message('two'))
      await t.publish(direct, 'three', message('three'))
      const got = new Collector()
      await t.consume(q, got.handler, { noAck: true })
      await got.waitForCount(2)
      await pause(QUIET_MS)
      assert.deepEqual(got.bodies().sort(), ['one', 'two'])
      await t.deleteQueue(q)
    },
  )

  it('declareTopology rejects with the broker refusal when an exchange exists with another type', { timeout: 60_000 }, async (t0) => {
    const t = await ctx.open()
    if (!t.declareTopology || ctx.opts.kind !== 'amqp') return t0.skip('only RabbitMQ refuses an exchange of another type')
    const exchange = uniqueName('tsq-conf-amqp-tx')
    await t.declareExchange({ name: exchange, type: 'direct', durable: false, autoDelete: true })
    const q = uniqueName('tsq-conf-amqp')
    ctx.track(q)
    await assert.rejects(
      t.declareTopology({
        exchanges: [{ name: exchange, type: 'fanout', durable: false, autoDelete: true }],
        queue: { name: q, durable: false, exclusive: false, autoDelete: false },
        bindings: [{ exchange, routingKey: 'k' }],
      }),
      (err: Error & { code?: string }) => err.code === 'PRECONDITION_FAILED' && /exchange/.test(err.message),
    )
    // The transport carries on after the refusal (a fresh control channel).
    assert.equal((await t.declareQueue({ name: q, durable: false, exclusive: false, autoDelete: false })).messageCount, 0)
  })

  it('declareQueue reports the ready message count', { timeout: 60_000 }, async () => {
    const t = await ctx.open()
    const q = await ctx.queue(t)
    for (const body of ['a', 'b', 'c']) await t.publish('', q, message(body))
    const again = await t.declareQueue({ name: q, durable: false, exclusive: false, autoDelete: false })
    assert.equal(again.messageCount, 3)
  })

  it('purge removes ready messages and returns how many', { timeout: 60_000 }, async () => {
    const t = await ctx.open()
    const q = await ctx.queue(t)
    for (const body of ['a', 'b', 'c']) await t.publish('', q, message(body))
    assert.equal(await t.purge(q), 3)
    const after = await t.declareQueue({ name: q, durable: false, exclusive: false, autoDelete: false })
    assert.equal(after.messageCount, 0)
    assert.equal(await t.purge(q), 0)
  })
}
