// The native delayed delivery ladder against kombu 5.5's own code: the fixture
// (test/fixtures/wire/generators/native_delayed_delivery.py) records every
// AMQP method kombu v5.5.4 issues and every routing key it computes.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import {
  DELAYED_DELIVERY_EXCHANGE,
  DELAYED_DELIVERY_LEVELS,
  DELAYED_DELIVERY_MAX_LEVEL,
  DELAYED_ENTRY_EXCHANGE,
  MAX_DELAY_SECONDS,
  bindForDelayedDelivery,
  delayRoutingKey,
  delayedDeliveryBindingKey,
  delayedDeliveryLayout,
  delayedPublishTarget,
  levelName,
  type DelayedDeliveryOp,
} from '../../../src/transport/amqp/delayed-delivery.js'

type Rec = Record<string, unknown>
interface Fixture {
  constants: { MAX_NUMBER_OF_BITS_TO_USE: number; MAX_LEVEL: number; CELERY_DELAYED_DELIVERY_EXCHANGE: string }
  level_names: string[]
  declare: { classic: Rec[]; quorum: Rec[] }
  bind: Record<string, Rec[]>
  routing_keys: { countdown: number; routing_key: string; result: string | { error: string } }[]
}
const fixture = JSON.parse(readFileSync(new URL('../../fixtures/wire/native-delayed-delivery.json', import.meta.url), 'utf8')) as Fixture

/** py-amqp's tag as this codebase's typed integer: I is a 32-bit int, L a 64-bit long. */
function untagArgs(args: Rec): Rec {
  return Object.fromEntries(
    Object.entries(args).map(([k, v]) => {
      const t = v as { $int?: string; tag?: string }
      if (typeof t === 'object' && t !== null && typeof t.$int === 'string') {
        assert.ok(t.tag === 'I' || t.tag === 'L', `unexpected py-amqp tag ${t.tag}`)
        return [k, { '!': t.tag === 'I' ? 'int' : 'long', value: Number(t.$int) }]
      }
      return [k, v]
    }),
  )
}

/** kombu's recorded call in this module's op shape; anything kombu sends that the shape cannot say must be a default. */
function fromKombu(op: Rec): DelayedDeliveryOp {
  const { method } = op
  if (method !== 'queue_declare') assert.equal(op.arguments, null, `${String(method)} with arguments`)
  if ('passive' in op) assert.equal(op.passive, false)
  switch (method) {
    case 'exchange_declare':
      return { method, exchange: op.exchange, type: op.type, durable: op.durable, autoDelete: op.auto_delete } as DelayedDeliveryOp
    case 'queue_declare':
      return {
        method,
        queue: op.queue,
        durable: op.durable,
        exclusive: op.exclusive,
        autoDelete: op.auto_delete,
        arguments: untagArgs(op.arguments as Rec),
      } as DelayedDeliveryOp
    case 'queue_bind':
      return { method, queue: op.queue, exchange: op.exchange, routingKey: op.routing_key } as DelayedDeliveryOp
    case 'exchange_bind':
      return { method, destination: op.destination, source: op.source, routingKey: op.routing_key } as DelayedDeliveryOp
    default:
      throw new Error(`unexpected kombu method ${String(method)}`)
  }
}

describe('native delayed delivery: constants and names (kombu 5.5)', () => {
  it('28 levels, max level 27, delivery exchange celery_delayed_delivery', () => {
    assert.equal(DELAYED_DELIVERY_LEVELS, fixture.constants.MAX_NUMBER_OF_BITS_TO_USE)
    assert.equal(DELAYED_DELIVERY_MAX_LEVEL, fixture.constants.MAX_LEVEL)
    assert.equal(DELAYED_DELIVERY_EXCHANGE, fixture.constants.CELERY_DELAYED_DELIVERY_EXCHANGE)
    assert.equal(DELAYED_ENTRY_EXCHANGE, 'celery_delayed_27')
    assert.equal(MAX_DELAY_SECONDS, 2 ** 28 - 1)
  })
  it('levelName matches level_name', () => {
    assert.deepEqual(
      fixture.level_names.map((_, level) => levelName(level)),
      fixture.level_names,
    )
    assert.throws(() => levelName(-1), RangeError)
  })
})

describe("native delayed delivery: the declared layout is kombu 5.5's, method for method", () => {
  for (const queueType of ['classic', 'quorum'] as const) {
    it(`${queueType}: same methods, order, names, flags, arguments and integer tags`, () => {
      const expected = fixture.declare[queueType].map(fromKombu)
      assert.equal(expected.length, 28 * 3 + 27 + 2)
      assert.deepEqual(delayedDeliveryLayout(queueType), expected)
    })
  }
  it('defaults to classic and refuses another type', () => {
    assert.deepEqual(delayedDeliveryLayout(), delayedDeliveryLayout('classic'))
    assert.throws(() => delayedDeliveryLayout('stream' as never), RangeError)
  })
  it('x-message-ttl switches from int to long exactly where py-amqp does (level 22)', () => {
    const ttl = (level: number) => {
      const op = delayedDeliveryLayout().find((o) => o.method === 'queue_declare' && o.queue === levelName(level))
      assert.ok(op && op.method === 'queue_declare')
      return op.arguments['x-message-ttl']
    }
    assert.deepEqual(ttl(21), { '!': 'int', value: 2_097_152_000 })
    assert.deepEqual(ttl(22), { '!': 'long', value: 4_194_304_000 })
    assert.deepEqual(ttl(0), { '!': 'int', value: 1000 })
  })
})

describe('native delayed delivery: routing keys (calculate_routing_key)', () => {
  for (const c of fixture.routing_keys) {
    const result = c.result
    if (typeof result === 'string') {
      it(`${c.countdown} s, "${c.routing_key}" → kombu's key`, () => {
        if (c.countdown > MAX_DELAY_SECONDS) {
          // kombu writes 29 bits, which the 28-level ladder reads shifted by one: refused here.
          assert.equal(result.split('.').length, 29 + 1)
          assert.throws(() => delayRoutingKey(c.countdown, c.routing_key), RangeError)
        } else {
          assert.equal(delayRoutingKey(c.countdown, c.routing_key), result)
        }
      })
    }
  }
  it('an empty routing key is refused, as kombu does', () => {
    assert.ok(fixture.routing_keys.some((c) => c.routing_key === '' && typeof c.result === 'object'))
    assert.throws(() => delayRoutingKey(1, ''), RangeError)
  })
  it('0 s, which kombu refuses, gives the all-zero key that walks straight through', () => {
    assert.ok(fixture.routing_keys.some((c) => c.countdown === 0 && typeof c.result === 'object'))
    assert.equal(delayRoutingKey(0, 'celery'), `${Array(28).fill('0').join('.')}.celery`)
  })
  it("a fraction is truncated, as Celery's int(countdown)", () => {
    assert.equal(delayRoutingKey(3.9, 'celery'), delayRoutingKey(3, 'celery'))
    assert.equal(delayRoutingKey(0.5, 'celery'), delayRoutingKey(0, 'celery'))
  })
  it('negative, NaN and infinite delays are refused', () => {
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY]) assert.throws(() => delayRoutingKey(bad, 'q'), RangeError)
  })
})

describe('native delayed delivery: publish target and queue bindings (Celery 5.5)', () => {
  it('publishes to celery_delayed_27 with the bit-prefixed key', () => {
    assert.deepEqual(delayedPublishTarget(75, 'celery'), {
      exchange: 'celery_delayed_27',
      routingKey: '0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1.0.0.1.0.1.1.celery',
    })
  })
  it('an ETA already past goes through without waiting', () => {
    assert.deepEqual(delayedPublishTarget(-5, 'q'), delayedPublishTarget(0, 'q'))
  })
  it('binding key: "#." prefixed unless it already starts with "#"', () => {
    assert.equal(delayedDeliveryBindingKey('tasks.add'), '#.tasks.add')
    assert.equal(delayedDeliveryBindingKey('#.already'), '#.already')
  })

  /** A channel that records what bindForDelayedDelivery asks, in kombu's recorded shape. */
  function recorder() {
    const ops: Rec[] = []
    const channel = {
      async bindExchange(destination: string, source: string, routingKey: string) {
        ops.push({ method: 'exchange_bind', destination, source, routing_key: routingKey, arguments: null })
        return {}
      },
      async bindQueue(queue: string, exchange: string, routingKey: string) {
        ops.push({ method: 'queue_bind', queue, exchange, routing_key: routingKey, arguments: null })
        return {}
      },
    }
    return { ops, channel: channel as unknown as Parameters<typeof bindForDelayedDelivery>[0] }
  }
  const cases: [string, string, string, string, string][] = [
    ['topic', 'ex.topic', 'tasks.add', 'q.topic', 'topic'],
    ['fanout', 'ex.fanout', 'fan', 'q.fanout', 'fanout'],
    ['hash-key', 'ex.hash', '#.already', 'q.hash', 'topic'],
    ['explicit-bindings', 'ex.multi', 'a.*', 'q.multi', 'topic'],
    ['direct-skipped', 'ex.direct', 'd', 'q.direct', 'direct'],
  ]
  for (const [name, exchange, routingKey, queue, type] of cases) {
    it(`${name}: binds what bind_queue_to_native_delayed_delivery_exchange binds`, async () => {
      const { ops, channel } = recorder()
      const bound = await bindForDelayedDelivery(channel, exchange, routingKey, queue, type)
      assert.equal(bound, type !== 'direct')
      assert.deepEqual(ops, fixture.bind[name])
    })
  }
  it('the default exchange is skipped (kombu sees it as direct)', async () => {
    const { ops, channel } = recorder()
    assert.equal(await bindForDelayedDelivery(channel, '', 'q', 'q', ''), false)
    assert.deepEqual(ops, [])
  })
})
