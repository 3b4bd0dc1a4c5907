import assert from 'node:assert/strict'
import { it } from 'node:test'
import { waitFor } from '../../../helpers/brokers.js'
import { Collector, type ConformanceContext, message, pause, QUIET_MS, WAIT_MS } from './context.js'

async function readyCount(ctx: ConformanceContext, q: string): Promise<number> {
  const fresh = await ctx.open()
  const { messageCount } = await fresh.declareQueue({ name: q, durable: false, exclusive: false, autoDelete: false })
  await fresh.close()
  return messageCount
}

export function ackRejectCases(ctx: ConformanceContext): void {
  it('an acked message is gone, even after the transport closes', { timeout: 60_000 }, async () => {
    const t = await ctx.open()
    const q = await ctx.queue(t)
    await t.publish('', q, message('once'))
    const got = new Collector()
    await t.consume(q, got.handler, { prefetch: 1 })
    await got.waitForCount(1)
    await got.deliveries[0]!.ack()
    await t.close()
    assert.equal(await readyCount(ctx, q), 0)
  })

  it('reject with requeue redelivers with redelivered=true', { timeout: 60_000 }, async () => {
    const t = await ctx.open()
    const q = await ctx.queue(t)
    await t.publish('', q, message('again'))
    const got = new Collector()
    await t.consume(q, got.handler, { prefetch: 1 })
    await got.waitForCount(1)
    assert.equal(got.deliveries[0]!.redelivered, false)
    await got.deliveries[0]!.reject({ requeue: true })
    await got.waitForCount(2, 'the redelivery')
    const second = got.deliveries[1]!
    assert.equal(second.body.toString(), 'again')
    assert.equal(second.redelivered, true)
    await second.ack()
  })

  it('reject without requeue drops the message', { timeout: 60_000 }, async () => {
    const t = await ctx.open()
    const q = await ctx.queue(t)
    await t.publish('', q, message('drop me'))
    await t.publish('', q, message('keep me'))
    const got = new Collector()
    await t.consume(q, got.handler, { prefetch: 1 })
    await got.waitForCount(1)
    await got.deliveries[0]!.reject({ requeue: false })
    await got.waitForCount(2)
    await got.deliveries[1]!.ack()
    await pause(QUIET_MS)
    assert.deepEqual(got.bodies(), ['drop me', 'keep me'])
    await t.close()
    assert.equal(await readyCount(ctx, q), 0)
  })

  it('a second ack of the same delivery is harmless', { timeout: 60_000 }, async () => {
    const t = await ctx.open()
    const q = await ctx.queue(t)
    await t.publish('', q, message('one'))
    await t.publish('', q, message('two'))
    const got = new Collector()
    await t.consume(q, got.handler, { prefetch: 1 })
    await got.waitForCount(1)
    await got.deliveries[0]!.ack()
    await got.deliveries[0]!.ack()
    await got.waitForCount(2)
    await got.deliveries[1]!.ack()
    await waitFor(async () => (await t.purge(q)) === 0, { timeoutMs: WAIT_MS, what: 'an empty queue' })
  })
}
