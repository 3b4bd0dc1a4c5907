import assert from 'node:assert/strict'
import { it } from 'node:test'
import { uniqueName } from '../../../helpers/brokers.js'
import { Collector, type ConformanceContext, message } from './context.js'

export function fanoutCases(ctx: ConformanceContext): void {
  // Consumers start before the publish: on Redis fanout is pub/sub and reaches
  // only live subscribers (capabilities.fanoutNeedsLiveSubscriber).
  it('a fanout exchange delivers to every bound queue', { timeout: 60_000 }, async () => {
    const t = await ctx.open()
    const exchange = uniqueName(`tsq-conf-${ctx.opts.kind}-fan`)
    await t.declareExchange({ name: exchange, type: 'fanout', durable: false, autoDelete: true })
    const q1 = await ctx.queue(t, { autoDelete: true, arguments: { 'x-expires': 10_000, 'x-message-ttl': 300_000 } })
    const q2 = await ctx.queue(t, { autoDelete: true, arguments: { 'x-expires': 10_000, 'x-message-ttl': 300_000 } })
    await t.bindQueue(q1, exchange, '')
    await t.bindQueue(q2, exchange, '')
    const a = new Collector()
    const b = new Collector()
    await t.consume(q1, a.handler, { noAck: true })
    await t.consume(q2, b.handler, { noAck: true })
    // As kombu's producer does: a publisher declares the exchange it sends to
    // (virtual transports learn the exchange type from the declaration).
    const publisher = await ctx.open()
    await publisher.declareExchange({ name: exchange, type: 'fanout', durable: false, autoDelete: true })
    await publisher.publish(exchange, '', message('{"method": "ping"}', { deliveryMode: 1 }))
    await a.waitForCount(1)
    await b.waitForCount(1)
    assert.deepEqual(a.bodies(), ['{"method": "ping"}'])
    assert.deepEqual(b.bodies(), ['{"method": "ping"}'])
    assert.equal(a.deliveries[0]!.exchange, exchange)
  })
}
