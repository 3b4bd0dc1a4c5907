// The virtual layer the Redis and file brokers build on (src/transport/virtual/):
// topic matching both ways (kombu's regex, which Redis keeps for Python's sake,
// and AMQP's words, the file broker's), where a publish goes for each exchange
// type over a store's primitives, and what a parking lot keeps and reads back.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { lookupIn, VirtualExchanges, type BindingRow, type ExchangeStore } from '../../../src/transport/virtual/exchanges.js'
import { VirtualParking, type ParkedEntry, type ParkingStore, type ParkTrim } from '../../../src/transport/virtual/parking.js'
import { AMQP_TOPIC, KOMBU_TOPIC } from '../../../src/transport/virtual/topic.js'
import type { ExchangeType, OutgoingMessage } from '../../../src/transport/transport.js'

const message = (body: string, priority = 0): OutgoingMessage => ({
  body: Buffer.from(body),
  properties: { contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, deliveryMode: 2, priority },
})

describe("kombu's topic rule (what a Redis binding member stores)", () => {
  it("turns binding keys into kombu 5.2.4's key_to_pattern regexes", () => {
    // Printed by kombu.transport.virtual.exchange.TopicExchange(None).key_to_pattern.
    const kombu: Record<string, string> = {
      'task.#': '^task\\..*?$',
      '*.online': '^.*?[^\\.]\\.online$',
      'a.*.c': '^a\\..*?[^\\.]\\.c$',
      'worker-heartbeat': '^worker\\-heartbeat$',
      'rk.é+x': '^rk\\.é\\+x$',
      '#': '^.*?$',
    }
    for (const [key, pattern] of Object.entries(kombu)) assert.equal(KOMBU_TOPIC.pattern(key), pattern, key)
  })

  it("matches as kombu's _match does, its quirks included, so tsq routes as a Python publisher", () => {
    const m = (key: string, routingKey: string) => KOMBU_TOPIC.matches(KOMBU_TOPIC.pattern(key), routingKey)
    assert.equal(m('a.*', 'a.b.c'), true)
    assert.equal(m('a.#', 'a'), false)
    assert.equal(m('task.#', 'task.sent.x'), true)
    assert.equal(m('*.online', 'a.b.online'), true)
    assert.equal(m('#', ''), true)
    assert.equal(KOMBU_TOPIC.matches('(unclosed', 'x'), false)
  })
})

describe("AMQP's topic rule (the file broker's)", () => {
  it('`*` is one word, `#` zero or more; the pattern is the key itself', () => {
    const m = (key: string, routingKey: string) => AMQP_TOPIC.matches(AMQP_TOPIC.pattern(key), routingKey)
    assert.equal(AMQP_TOPIC.pattern('a.*'), 'a.*')
    assert.equal(m('a.*', 'a.b.c'), false)
    assert.equal(m('a.*', 'a.b'), true)
    assert.equal(m('a.#', 'a'), true)
    assert.equal(m('task.#', 'task.sent.x'), true)
    assert.equal(m('#.x', 'x'), true)
    assert.equal(m('*.online', 'a.b.online'), false)
  })
})

describe('lookup by exchange type', () => {
  const table: BindingRow[] = [
    { routingKey: 'a', pattern: '', queue: 'q1' },
    { routingKey: 'b', pattern: '', queue: 'q2' },
    { routingKey: 'a', pattern: '', queue: 'q1' },
    { routingKey: 'a', pattern: '', queue: '' },
  ]
  it('direct by equal keys, fanout to every bound queue, each queue once, never the empty name', () => {
    assert.deepEqual(lookupIn('direct', table, 'a', AMQP_TOPIC), ['q1'])
    assert.deepEqual(lookupIn('fanout', table, 'zzz', AMQP_TOPIC).sort(), ['q1', 'q2'])
  })
  it('topic by the stored pattern, through the rule given', () => {
    const rows: BindingRow[] = [{ routingKey: 'a.#', pattern: KOMBU_TOPIC.pattern('a.#'), queue: 'k' }]
    assert.deepEqual(lookupIn('topic', rows, 'a.b', KOMBU_TOPIC), ['k'])
    assert.deepEqual(lookupIn('topic', rows, 'a', KOMBU_TOPIC), [])
  })
})

/** A store in memory, recording what the layer asked of it. */
function memoryStore(types: Record<string, ExchangeType>, withFanout: boolean) {
  const tables = new Map<string, BindingRow[]>()
  const puts: Array<{ queues: readonly string[]; exchange: string; routingKey: string }> = []
  const fanouts: string[] = []
  const store: ExchangeStore = {
    typeOf: async (exchange) => types[exchange],
    table: async (exchange) => tables.get(exchange) ?? [],
    storeBinding: async (exchange, _type, row) => void tables.set(exchange, [...(tables.get(exchange) ?? []), row]),
    put: async (queues, exchange, routingKey) => void puts.push({ queues, exchange, routingKey }),
  }
  if (withFanout) store.putFanout = async (exchange, routingKey) => void fanouts.push(`${exchange}/${routingKey}`)
  return { store, tables, puts, fanouts }
}

describe('VirtualExchanges over a store', () => {
  it('binds with the row the type asks for, and refuses the default exchange and an unknown one', async () => {
    const { store, tables } = memoryStore({ t: 'topic', d: 'direct' }, false)
    const x = new VirtualExchanges(store, KOMBU_TOPIC)
    await x.bind('q', 't', 'a.#')
    await x.bind('q', 'd', 'k')
    assert.deepEqual(tables.get('t'), [{ routingKey: 'a.#', pattern: '^a\\..*?$', queue: 'q' }])
    assert.deepEqual(tables.get('d'), [{ routingKey: 'k', pattern: '', queue: 'q' }])
    await assert.rejects(x.bind('q', '', 'k'), { code: 'ACCESS_REFUSED' })
    await assert.rejects(x.bind('q', 'nope', 'k'), { code: 'NOT_FOUND' })
  })

  it('publishes to the default exchange by name, to bound queues, drops what nothing takes', async () => {
    const { store, puts } = memoryStore({ d: 'direct', f: 'fanout' }, false)
    const x = new VirtualExchanges(store, AMQP_TOPIC)
    await x.bind('q1', 'd', 'k')
    await x.bind('q1', 'f', '')
    await x.bind('q2', 'f', '')
    await x.publish('', 'celery', message('1'))
    await x.publish('d', 'k', message('2'))
    await x.publish('d', 'other', message('3'))
    await x.publish('nope', 'k', message('4'))
    await x.publish('f', 'any', message('5'))
    assert.deepEqual(
      puts.map((p) => [p.exchange, p.routingKey, [...p.queues].sort()]),
      [
        ['', 'celery', ['celery']],
        ['d', 'k', ['q1']],
        ['f', 'any', ['q1', 'q2']],
      ],
    )
    assert.deepEqual(await x.lookup('', 'celery'), ['celery'])
    assert.deepEqual(await x.lookup('nope', 'k'), [])
  })

  it("sends fanout through the broker's own broadcast where it has one (Redis pub/sub)", async () => {
    const { store, puts, fanouts } = memoryStore({ f: 'fanout' }, true)
    const x = new VirtualExchanges(store, KOMBU_TOPIC)
    await x.bind('q1', 'f', '')
    await x.publish('f', 'rk', message('x'))
    assert.deepEqual(fanouts, ['f/rk'])
    assert.deepEqual(puts, [])
    // A restore still finds the bound queues (kombu's _lookup).
    assert.deepEqual(await x.lookup('f', 'rk'), ['q1'])
  })
})

describe('VirtualParking over a store', () => {
  function memoryParking() {
    const added: Array<{ lot: string; entry: ParkedEntry; priority: number; trim: ParkTrim }> = []
    const entries: ParkedEntry[] = []
    let open = true
    const store: ParkingStore = {
      add: async (lot, entry, priority, trim) => void (added.push({ lot, entry, priority, trim }), entries.push(entry)),
      releaseDue: async () => ({ moved: 1, nextAt: 5 }),
      entries: async (_lot, limit) => entries.slice(0, limit),
      remove: async (_lot, ids) => entries.filter((e) => ids.has(e.id)).length,
      count: async () => entries.length,
    }
    const parking = new VirtualParking(store, () => {
      if (!open) throw new Error('closed')
    })
    return { parking, added, entries, close: () => (open = false) }
  }

  it('keeps each message as the kombu envelope it goes back as, under an id that sorts in parking order', async () => {
    const { parking, added, entries } = memoryParking()
    const before = Date.now()
    await parking.park('lot', { queue: 'q', exchange: 'x', routingKey: 'k' }, message('a', 7), 1000, { maxAgeMs: 60_000, maxLength: 3 })
    await parking.park('lot', { queue: 'q', exchange: 'x', routingKey: 'k' }, message('b'), 2000)
    assert.equal(added[0]!.priority, 7)
    assert.equal(added[0]!.trim.maxLength, 3)
    assert.ok(added[0]!.trim.minAt! >= before - 60_000 && added[0]!.trim.minAt! <= Date.now() - 60_000)
    assert.deepEqual(added[1]!.trim, {})
    assert.ok(added[0]!.entry.id < added[1]!.entry.id)
    entries.push({ id: 'zz', queue: 'q', at: 3000, envelope: 'not an envelope' })
    const listed = await parking.list('lot')
    assert.deepEqual(
      listed.map((p) => [p.message.body.toString(), p.exchange, p.routingKey, p.queue, p.at, p.message.properties.priority]),
      [
        ['a', 'x', 'k', 'q', 1000, 7],
        ['b', 'x', 'k', 'q', 2000, 0],
      ],
    )
    assert.deepEqual(await parking.list('lot', { limit: 0 }), [])
    assert.equal((await parking.list('lot', { limit: 1 })).length, 1)
  })

  it('asks the store nothing for no lots or no ids, and refuses every call once closed', async () => {
    const { parking, close } = memoryParking()
    assert.deepEqual(await parking.releaseDue([]), { moved: 0, nextAt: null })
    assert.deepEqual(await parking.releaseDue(['lot']), { moved: 1, nextAt: 5 })
    assert.equal(await parking.drop('lot', []), 0)
    close()
    await assert.rejects(parking.count('lot'), /closed/)
    await assert.rejects(parking.drop('lot', []), /closed/)
  })
})
