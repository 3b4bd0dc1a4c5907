import assert from 'node:assert/strict'
import { it } from 'node:test'
import type { Delivery } from '../../../../src/transport/transport.js'
import { uniqueName, waitFor } from '../../../helpers/brokers.js'
import { Collector, type ConformanceContext, message, once, WAIT_MS } from './context.js'

const RECONNECT_MS = 30_000

export function reconnectCases(ctx: ConformanceContext): void {
  const dropsConnections = ctx.opts.kind !== 'file'

  it('survives a dropped connection: emits lost/restored and loses no message', { timeout: 120_000 }, async () => {
    const t = await ctx.open()
    const lost = once(t, 'connection:lost')
    const restored = once(t, 'connection:restored')
    const q = await ctx.queue(t)
    const seen = new Set<string>()
    await t.consume(
      q,
      (d: Delivery) => {
        seen.add(d.body.toString())
        void d.ack()
      },
      { prefetch: 4 },
    )
    const before = Array.from({ length: 5 }, (_, i) => `before-${i}`)
    for (const body of before) await t.publish('', q, message(body))
    await waitFor(() => before.every((b) => seen.has(b)), { timeoutMs: WAIT_MS, what: 'messages before the drop' })

    await ctx.opts.killConnections()
    if (dropsConnections) await waitFor(() => lost.seen(), { timeoutMs: WAIT_MS, what: "'connection:lost'" })

    // Published while the transport may still be reconnecting: publish waits for it.
    const after = Array.from({ length: 5 }, (_, i) => `after-${i}`)
    for (const body of after) await t.publish('', q, message(body))
    if (dropsConnections) await waitFor(() => restored.seen(), { timeoutMs: RECONNECT_MS, what: "'connection:restored'" })
    await waitFor(() => after.every((b) => seen.has(b)), { timeoutMs: RECONNECT_MS, what: 'messages after the drop' })
    assert.deepEqual([...seen].sort(), [...before, ...after].sort())
  })

  it('replays topology after a drop: an auto-delete queue on a fanout exchange receives again', { timeout: 120_000 }, async () => {
    const t = await ctx.open()
    const restored = once(t, 'connection:restored')
    const exchange = uniqueName(`tsq-conf-${ctx.opts.kind}-fan`)
    await t.declareExchange({ name: exchange, type: 'fanout', durable: false, autoDelete: true })
    const q = await ctx.queue(t, { autoDelete: true, arguments: { 'x-expires': 10_000, 'x-message-ttl': 300_000 } })
    await t.bindQueue(q, exchange, '')
    const got = new Collector()
    await t.consume(q, got.handler, { noAck: true })

    await ctx.opts.killConnections()
    if (dropsConnections) await waitFor(() => restored.seen(), { timeoutMs: RECONNECT_MS, what: "'connection:restored'" })

    const publisher = await ctx.open()
    await publisher.declareExchange({ name: exchange, type: 'fanout', durable: false, autoDelete: true })
    await waitFor(
      async () => {
        // Fanout reaches only bound queues (and on Redis live subscribers), so
        // keep publishing until the replayed subscription receives one.
        await publisher.publish(exchange, '', message('after-drop', { deliveryMode: 1 }))
        return got.deliveries.length > 0
      },
      { timeoutMs: RECONNECT_MS, intervalMs: 250, what: 'a fanout delivery after the reconnect' },
    )
    assert.equal(got.deliveries[0]!.body.toString(), 'after-drop')
  })
}
