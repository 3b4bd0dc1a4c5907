// The topology as celery-amqp-events declares it (amqp_events/celery.py and
// its own tests, demo/tests.py): names and arguments to the byte.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { archivedExchangeName, handlerQueueName, recoverExchangeName, retryExchangeName, retryStepFor } from '../../../src/bus/names.js'
import { resolveBusSettings } from '../../../src/bus/settings.js'
import { busTopology } from '../../../src/bus/topology.js'
import { toQueueArguments } from '../../../src/transport/amqp/properties.js'

const defaults = resolveBusSettings({}, {})

describe("bus names (the library's get_retry_exchange_name, recover/archived_exchange_name)", () => {
  it('S.E, S:recover, S:retry, S:retry.n, S:archived', () => {
    assert.equal(handlerQueueName('billing', 'shipping.parcel.sent'), 'billing.shipping.parcel.sent')
    assert.equal(recoverExchangeName('billing'), 'billing:recover')
    assert.equal(retryExchangeName('billing'), 'billing:retry')
    assert.equal(retryExchangeName('billing', 0), 'billing:retry')
    assert.equal(retryExchangeName('billing', 3), 'billing:retry.3')
    assert.equal(archivedExchangeName('billing'), 'billing:archived')
  })

  it('retry n waits at step n (1, 2, 4 … s), the last step past the end', () => {
    assert.deepEqual(
      [0, 1, 2, 3].map((r) => retryStepFor(r, 10)),
      [0, 1, 2, 3],
    )
    assert.equal(retryStepFor(12, 10), 9)
  })
})

describe('settings: AMQP_EVENTS_* under createEventsApp options', () => {
  it("the library's defaults", () => {
    assert.deepEqual(defaults, { maxRetries: 10, archiveTtlMs: 604_800_000, archiveMaxLength: 10_000 })
  })
  it('env, then options win', () => {
    const env = { AMQP_EVENTS_MAX_RETRIES: '3', AMQP_EVENTS_ARCHIVED_MESSAGE_TTL: '60000', AMQP_EVENTS_ARCHIVED_QUEUE_LENGTH: '5' }
    assert.deepEqual(resolveBusSettings({}, env), { maxRetries: 3, archiveTtlMs: 60_000, archiveMaxLength: 5 })
    assert.deepEqual(resolveBusSettings({ maxRetries: 4, archiveMaxLength: 7 }, env), {
      maxRetries: 4,
      archiveTtlMs: 60_000,
      archiveMaxLength: 7,
    })
  })
  it('a bad value is one CONFIG error naming the setting', () => {
    assert.throws(
      () => resolveBusSettings({}, { AMQP_EVENTS_MAX_RETRIES: 'ten' }),
      (e: Error & { code?: string }) => e.code === 'CONFIG' && /AMQP_EVENTS_MAX_RETRIES/.test(e.message),
    )
    assert.throws(() => resolveBusSettings({ archiveTtl: -1 }, {}), /archiveTtl/)
  })
})

describe('busTopology (what _register_retry_queues, _register_archived_queue and _generate_task_queues declare)', () => {
  const t = busTopology('billing', ['shipping.parcel.sent'], defaults)

  it('N retry steps + M handler queues + 1 archive', () => {
    assert.equal(t.queues.length, 10 + 1 + 1)
  })

  it('retry step n: fanout exchange and queue of the same name, x-message-ttl 2ⁿ×1000, DLX S:recover, bound with ""', () => {
    for (let n = 0; n < 10; n += 1) {
      const name = n ? `billing:retry.${n}` : 'billing:retry'
      assert.deepEqual(
        t.exchanges.find((e) => e.name === name),
        { name, type: 'fanout', durable: true, autoDelete: false },
      )
      assert.deepEqual(
        t.queues.find((q) => q.name === name),
        {
          name,
          durable: true,
          exclusive: false,
          autoDelete: false,
          arguments: { 'x-message-ttl': 2 ** n * 1000, 'x-dead-letter-exchange': 'billing:recover' },
        },
      )
      assert.ok(t.bindings.some((b) => b.queue === name && b.exchange === name && b.routingKey === ''))
    }
  })

  it('archive: fanout S:archived, queue with exactly x-message-ttl, x-max-length, x-queue-mode lazy', () => {
    assert.deepEqual(
      t.exchanges.find((e) => e.name === 'billing:archived'),
      { name: 'billing:archived', type: 'fanout', durable: true, autoDelete: false },
    )
    assert.deepEqual(t.queues.find((q) => q.name === 'billing:archived')?.arguments, {
      'x-message-ttl': 604_800_000,
      'x-max-length': 10_000,
      'x-queue-mode': 'lazy',
    })
  })

  it('handler queue S.E: exactly x-dead-letter-exchange S:retry, bound to events and S:recover (topic) by E', () => {
    assert.deepEqual(
      t.queues.find((q) => q.name === 'billing.shipping.parcel.sent'),
      {
        name: 'billing.shipping.parcel.sent',
        durable: true,
        exclusive: false,
        autoDelete: false,
        arguments: { 'x-dead-letter-exchange': 'billing:retry' },
      },
    )
    assert.deepEqual(
      t.exchanges.find((e) => e.name === 'events'),
      { name: 'events', type: 'topic', durable: true, autoDelete: false },
    )
    assert.deepEqual(
      t.exchanges.find((e) => e.name === 'billing:recover'),
      { name: 'billing:recover', type: 'topic', durable: true, autoDelete: false },
    )
    const bound = t.bindings.filter((b) => b.queue === 'billing.shipping.parcel.sent').map((b) => [b.exchange, b.routingKey])
    assert.deepEqual(bound, [
      ['events', 'shipping.parcel.sent'],
      ['billing:recover', 'shipping.parcel.sent'],
    ])
  })

  it('AMQP_EVENTS_MAX_RETRIES=0: no steps, no recover binding, handler queue without arguments; ARCHIVED_* both 0: no archive', () => {
    const none = busTopology('s', ['e'], { maxRetries: 0, archiveTtlMs: 0, archiveMaxLength: 0 })
    assert.deepEqual(none.queues, [{ name: 's.e', durable: true, exclusive: false, autoDelete: false }])
    assert.deepEqual(none.bindings, [{ queue: 's.e', exchange: 'events', routingKey: 'e' }])
  })

  it('arguments reach the AMQP table as py-amqp writes them: ints tagged, strings as strings', () => {
    assert.deepEqual(
      toQueueArguments({ 'x-message-ttl': 1000, 'x-dead-letter-exchange': 'b:recover', 'x-queue-mode': 'lazy', 'x-max-length': 10_000 }),
      {
        'x-message-ttl': { '!': 'int', value: 1000 },
        'x-dead-letter-exchange': 'b:recover',
        'x-queue-mode': 'lazy',
        'x-max-length': { '!': 'int', value: 10_000 },
      },
    )
  })

  it('steps: false (Redis, file) leaves out the step queues and the archive', () => {
    const parked = busTopology('billing', ['e1'], defaults, { steps: false })
    assert.deepEqual(
      parked.queues.map((q) => q.name),
      ['billing.e1'],
    )
  })
})
