import assert from 'node:assert/strict'
import { it } from 'node:test'
import { Collector, type ConformanceContext, message, pause, QUIET_MS } from './context.js'

export function ttlCases(ctx: ConformanceContext): void {
  // The mailbox's reply queues (spec §3.1) carry x-expires and x-message-ttl.
  it('a queue with x-message-ttl does not deliver expired messages', { timeout: 60_000 }, async (t) => {
    const transport = await ctx.open()
    if (!transport.capabilities.queueTtl) {
      const reason = `${ctx.opts.kind}: capabilities.queueTtl is false (the broker does not expire messages itself)`
      process.stderr.write(`SKIP: ${reason}\n`)
      t.skip(reason)
      return
    }
    const q = await ctx.queue(transport, { autoDelete: true, arguments: { 'x-expires': 10_000, 'x-message-ttl': 200 } })
    await transport.publish('', q, message('stale', { deliveryMode: 1 }))
    await pause(1_000)
    const got = new Collector()
    await transport.consume(q, got.handler, { noAck: true })
    await transport.publish('', q, message('fresh', { deliveryMode: 1 }))
    await got.waitForCount(1)
    await pause(QUIET_MS)
    assert.deepEqual(got.bodies(), ['fresh'])
  })
}
