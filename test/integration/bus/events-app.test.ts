// createEventsApp on real brokers: what an event function sends (or refuses
// to), and the parking lots Redis and the file broker keep retries and the
// archive in. No worker: the API and the transport only.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, describe, it } from 'node:test'
import { brokerSkipReason, uniqueName, type BrokerKind } from '../../helpers/brokers.js'
import { createEventsApp } from '../../../src/bus/events-app.js'
import { handlerQueueName } from '../../../src/bus/names.js'
import { decodeTaskMessage } from '../../../src/protocol/index.js'
import { busBroker, cleanupService, withBrokerTransport } from '../../e2e/bus-support.js'

for (const kind of ['amqp', 'redis', 'file'] as BrokerKind[]) {
  describe(`createEventsApp on ${kind}`, { skip: await brokerSkipReason(kind) }, () => {
    const broker = busBroker(kind)
    const cleanups: Array<() => Promise<void>> = []
    after(async () => {
      for (const c of cleanups) await c().catch(() => undefined)
    })

    it('an event function that throws refuses the event before anything is sent; one that passes resolves once the broker has it', async () => {
      const service = uniqueName('api')
      const event = `${uniqueName('ev')}.invoice.paid`
      cleanups.push(() => cleanupService(broker, service, [event]))
      const app = createEventsApp(service, { broker: broker.url })
      app.handler(event, () => undefined)
      const invoicePaid = app.event(event, (invoice: { id?: number; total: number }) => {
        if (!invoice.id) throw new Error('no id')
      })
      try {
        await assert.rejects(invoicePaid({ total: 9.5 }), /no id/)
        // Nothing went out: not even the topology (the validation ran first).
        await withBrokerTransport(broker, async (t) =>
          assert.equal((await t.checkQueue!(handlerQueueName(service, event)))?.messageCount ?? 0, 0),
        )
        const id = await invoicePaid({ id: 42, total: 9.5 })
        const ready = await withBrokerTransport(broker, (t) => t.checkQueue!(handlerQueueName(service, event)))
        assert.equal(ready?.messageCount, 1, 'in its handler queue, declared by the firing side')
        // The message is an ordinary Celery task message named as the event.
        await withBrokerTransport(broker, async (t) => {
          const got = await new Promise<{ body: Buffer; headers: Record<string, unknown>; contentType: string }>((resolve) => {
            void t.consume(handlerQueueName(service, event), async (d) => {
              await d.ack()
              resolve({ body: d.body, headers: d.properties.headers, contentType: d.properties.contentType })
            })
          })
          const m = decodeTaskMessage({ headers: got.headers, body: got.body, contentType: got.contentType })
          assert.equal(m.id, id)
          assert.equal(m.task, event)
          assert.deepEqual(m.args, [{ id: 42, total: 9.5 }])
        })
      } finally {
        await app.close()
      }
    })

    it('a second handler for one event is refused, as the library refuses it', () => {
      const app = createEventsApp(uniqueName('dup'))
      app.handler('a.b', () => undefined)
      assert.throws(() => app.handler('a.b', () => undefined), /already registered/)
      assert.throws(() => createEventsApp('bad:name'), /colon/)
    })

    if (kind !== 'amqp') {
      it('parking: due messages move into their queue at once and in order, the rest wait; a lot trims by length and age', async () => {
        const lot = uniqueName('lot')
        const queue = uniqueName('q')
        await withBrokerTransport(broker, async (t) => {
          await t.declareQueue({ name: queue, durable: true, exclusive: false, autoDelete: false })
          const parking = t.parking!
          const msg = (n: number) => ({
            body: Buffer.from(String(n)),
            properties: { contentType: 'text/plain', contentEncoding: 'utf-8', headers: { n }, deliveryMode: 2 as const, priority: 0 },
          })
          const now = Date.now()
          await parking.park(lot, { queue, exchange: 'x', routingKey: 'k' }, msg(1), now - 10)
          await parking.park(lot, { queue, exchange: 'x', routingKey: 'k' }, msg(2), now + 60_000)
          assert.equal(await parking.count(lot), 2)
          const { moved, nextAt } = await parking.releaseDue([lot])
          assert.equal(moved, 1)
          assert.equal(nextAt, Math.round(now + 60_000))
          assert.equal((await t.checkQueue!(queue))?.messageCount, 1)
          const left = await parking.list(lot)
          assert.deepEqual(
            left.map((p) => p.message.body.toString()),
            ['2'],
          )
          assert.equal(left[0]!.exchange, 'x')
          assert.equal(await parking.drop(lot, [left[0]!.id, randomUUID()]), 1)
          for (let i = 0; i < 5; i += 1) await parking.park(lot, { queue, exchange: '', routingKey: '' }, msg(i), now + i, { maxLength: 3 })
          assert.deepEqual(
            (await parking.list(lot)).map((p) => p.message.body.toString()),
            ['2', '3', '4'],
          )
          // Parked in one millisecond (a burst of failures into the archive): still the oldest go first.
          await parking.drop(
            lot,
            (await parking.list(lot)).map((p) => p.id),
          )
          for (let i = 0; i < 8; i += 1) await parking.park(lot, { queue, exchange: '', routingKey: '' }, msg(i), now, { maxLength: 3 })
          assert.deepEqual(
            (await parking.list(lot)).map((p) => p.message.body.toString()),
            ['5', '6', '7'],
          )
          await parking.park(lot, { queue, exchange: '', routingKey: '' }, msg(9), Date.now(), { maxAgeMs: 200 })
          await new Promise((r) => setTimeout(r, 300))
          await parking.park(lot, { queue, exchange: '', routingKey: '' }, msg(10), Date.now(), { maxAgeMs: 200 })
          assert.deepEqual(
            (await parking.list(lot)).map((p) => p.message.body.toString()),
            ['10'],
          )
          await parking.drop(
            lot,
            (await parking.list(lot)).map((p) => p.id),
          )
          await t.deleteQueue(queue)
        })
      })
    }
  })
}
