import assert from 'node:assert/strict'
import { it } from 'node:test'
import { Collector, type ConformanceContext, message } from './context.js'

export function closeRequeueCases(ctx: ConformanceContext): void {
  it('close hands unacked deliveries to another transport', { timeout: 60_000 }, async () => {
    const first = await ctx.open()
    const q = await ctx.queue(first)
    for (const body of ['a', 'b', 'c']) await first.publish('', q, message(body))
    const held = new Collector()
    await first.consume(q, held.handler, { prefetch: 10 })
    await held.waitForCount(3)
    await first.close({ requeueUnacked: true })

    const second = await ctx.open()
    const got = new Collector()
    await second.consume(q, got.handler, { prefetch: 10 })
    await got.waitForCount(3, 'the requeued deliveries')
    for (const d of got.deliveries) await d.ack()
    assert.deepEqual(got.bodies().sort(), ['a', 'b', 'c'])
  })

  it(
    'a close that overtakes a starting consume leaves no consumer behind: a later message waits for the next transport',
    { timeout: 60_000 },
    async () => {
      const first = await ctx.open()
      const q = await ctx.queue(first)
      const stray = new Collector()
      // Not awaited: close() runs while consume() is still on its way.
      const starting = first.consume(q, stray.handler, { prefetch: 10 }).then(
        () => true,
        () => false,
      )
      await first.close({ requeueUnacked: true })
      const started = await starting

      const second = await ctx.open()
      await second.publish('', q, message('after-close'))
      const got = new Collector()
      await second.consume(q, got.handler, { prefetch: 10 })
      await got.waitForCount(1, `the message published after close (the first consume ${started ? 'resolved' : 'was refused'})`)
      for (const d of got.deliveries) await d.ack()
      assert.deepEqual(stray.bodies(), [])
    },
  )
}
