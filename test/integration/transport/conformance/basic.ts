import assert from 'node:assert/strict'
import { it } from 'node:test'
import { uniqueName } from '../../../helpers/brokers.js'
import { Collector, type ConformanceContext, message, pause, QUIET_MS } from './context.js'

export function basicCases(ctx: ConformanceContext): void {
  it('publishes to the default exchange and consumes with properties intact', { timeout: 60_000 }, async () => {
    const t = await ctx.open()
    const q = await ctx.queue(t)
    const headers = { lang: 'py', task: 'tasks.add', retries: 0, timelimit: [30, 20], shadow: null, ignore_result: false, nested: { a: 'b' } }
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
