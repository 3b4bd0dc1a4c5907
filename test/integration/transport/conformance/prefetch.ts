import assert from 'node:assert/strict'
import { it } from 'node:test'
import { Collector, type ConformanceContext, message, pause, QUIET_MS } from './context.js'

export function prefetchCases(ctx: ConformanceContext): void {
  it('prefetch bounds unacked deliveries; an ack lets the next one in', { timeout: 60_000 }, async () => {
    const t = await ctx.open()
    const q = await ctx.queue(t)
    for (let i = 0; i < 5; i += 1) await t.publish('', q, message(`m${i}`))
    const got = new Collector()
    const consumer = await t.consume(q, got.handler, { prefetch: 2 })
    await got.waitForCount(2)
    await pause(QUIET_MS)
    assert.equal(got.deliveries.length, 2, 'no more than the prefetch window while nothing is acked')
    await got.deliveries[0]!.ack()
    await got.waitForCount(3, 'a third delivery after one ack')
    await pause(QUIET_MS)
    assert.equal(got.deliveries.length, 3)
    await consumer.setPrefetch(10)
    await got.waitForCount(5, 'the rest after setPrefetch(10)')
    for (const d of got.deliveries.slice(1)) await d.ack()
    assert.deepEqual(got.bodies().sort(), ['m0', 'm1', 'm2', 'm3', 'm4'])
  })

  it('prefetch is per consumer: two consumers each get their window', { timeout: 60_000 }, async () => {
    const t = await ctx.open()
    const q1 = await ctx.queue(t)
    const q2 = await ctx.queue(t)
    for (let i = 0; i < 3; i += 1) {
      await t.publish('', q1, message(`a${i}`))
      await t.publish('', q2, message(`b${i}`))
    }
    const a = new Collector()
    const b = new Collector()
    await t.consume(q1, a.handler, { prefetch: 1 })
    await t.consume(q2, b.handler, { prefetch: 2 })
    await a.waitForCount(1)
    await b.waitForCount(2)
    await pause(QUIET_MS)
    assert.equal(a.deliveries.length, 1)
    assert.equal(b.deliveries.length, 2)
    for (const d of [...a.deliveries, ...b.deliveries]) await d.ack()
  })
}
