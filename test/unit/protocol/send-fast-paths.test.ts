// The send path writes the common message directly (argsrepr and
// kwargsrepr of plain values, the JSON body with no callbacks, the Redis
// envelope as text). Each shortcut must give the very bytes of the general
// path it skips, which is the one checked against Celery's captures
// (task-message.test.ts, repr-and-json.test.ts): compared here value by value
// over a seeded corpus that includes the edges (quotes, non-ASCII, surrogate
// pairs, floats, big integers, and lengths on both sides of the limit).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { argsRepr, dumps, encodeBody, encodeTaskV2With, kwargsRepr, PyTuple, REPR_MAXSIZE, saferepr } from '../../../src/protocol/index.js'
import { buildEnvelope, encodeEnvelope, serializeEnvelope } from '../../../src/transport/kombu-envelope.js'
import type { OutgoingMessage } from '../../../src/transport/transport.js'

/** mulberry32: a fixed sequence, so a failure is the same failure on the next run. */
function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const PIECES = ['a', 'Z', ' ', "'", '"', '\\', '\n', 'é', '€', '😀', '\u0000', '\ud800', 'x'.repeat(37)]

function scalar(r: () => number): unknown {
  switch (Math.floor(r() * 9)) {
    case 0:
      return Math.floor(r() * 2000) - 1000
    case 1:
      return (r() - 0.5) * 1e6
    case 2:
      return [NaN, Infinity, -Infinity, 0, -0, 1e21, 1e-7, 2 ** 53 + 2][Math.floor(r() * 8)]
    case 3:
      return r() < 0.5
    case 4:
      return null
    case 5:
      return BigInt(Math.floor(r() * 1e9)) * 10n ** 12n
    default: {
      let s = ''
      const n = Math.floor(r() * 12)
      for (let i = 0; i < n; i++) s += PIECES[Math.floor(r() * PIECES.length)]
      return s
    }
  }
}

describe('[send fast paths] argsrepr and kwargsrepr of plain values are written directly, as saferepr writes them', () => {
  it('argsRepr equals saferepr of the tuple for 5,000 generated argument lists', () => {
    const r = rng(27)
    for (let n = 0; n < 5000; n++) {
      const args = Array.from({ length: Math.floor(r() * 6) }, () => scalar(r))
      assert.equal(argsRepr(args), saferepr(new PyTuple([...args]), REPR_MAXSIZE), `args ${String(n)}`)
    }
  })

  it('kwargsRepr equals saferepr of the dict for 5,000 generated keyword maps', () => {
    const r = rng(72)
    for (let n = 0; n < 5000; n++) {
      const kwargs: Record<string, unknown> = {}
      for (let i = Math.floor(r() * 5); i > 0; i--) kwargs[String(scalar(r) ?? 'k')] = scalar(r)
      if (r() < 0.1) kwargs.skipped = undefined
      assert.equal(kwargsRepr(kwargs), saferepr(kwargs, REPR_MAXSIZE), `kwargs ${String(n)}`)
    }
  })

  it("lengths around saferepr's limit come out cut exactly as saferepr cuts them", () => {
    for (let len = 990; len <= 1030; len++) {
      for (const args of [
        ['y'.repeat(len)],
        ['a b '.repeat(len / 4), 1],
        [1, "it's ".repeat(len / 5)],
        Array.from({ length: len / 3 }, (_, i) => i),
      ]) {
        assert.equal(argsRepr(args), saferepr(new PyTuple([...args]), REPR_MAXSIZE), `length ${len}`)
        const kwargs = Object.fromEntries(args.map((v, i) => [`k${i}`, v]))
        assert.equal(kwargsRepr(kwargs), saferepr(kwargs, REPR_MAXSIZE), `kwargs length ${len}`)
      }
    }
  })

  it('nested values, Maps, Dates and bytes still go through saferepr', () => {
    const args = [[1, [2, [3, [4]]]], new Map([['a', 1]]), new Date(Date.UTC(2024, 0, 1)), new Uint8Array([104, 105]), { k: 'v' }]
    assert.equal(argsRepr(args), saferepr(new PyTuple([...args]), REPR_MAXSIZE))
    assert.equal(kwargsRepr({ nested: { a: [1, 2] } }), "{'nested': {'a': [1, 2]}}")
  })
})

describe('[send fast paths] the task body is written as dumps writes it', () => {
  it('a task with no callbacks, errbacks, chain or chord: one JSON text, the same as dumps([args, kwargs, embed])', () => {
    const r = rng(5)
    for (let n = 0; n < 500; n++) {
      const args = Array.from({ length: Math.floor(r() * 4) }, () => scalar(r)).map((v) => (typeof v === 'bigint' ? Number(v) : v))
      const kwargs = { x: scalar(r), nested: [scalar(r), { y: scalar(r) }] }
      const message = encodeTaskV2With('proj.add', { args, kwargs, origin: 'gen1@h' }, { serializer: 'json' })
      assert.equal(message.body.toString('utf8'), dumps(message.value))
      assert.deepEqual(message.body, encodeBody(message.value, { serializer: 'json' }).body)
    }
  })

  it('with a callback the embed is written in full', () => {
    const link = { task: 'proj.log', args: [], kwargs: {}, options: {}, subtask_type: null, immutable: false }
    const message = encodeTaskV2With('proj.add', { args: [1], origin: 'gen1@h', embed: { callbacks: [link] } }, { serializer: 'json' })
    assert.equal(message.body.toString('utf8'), dumps([[1], {}, { callbacks: [link], errbacks: null, chain: null, chord: null }]))
  })

  it('dumps still refuses a cycle, shallow or past the depth where it starts looking', () => {
    const shallow: unknown[] = [1]
    shallow.push(shallow)
    assert.throws(() => dumps(shallow), /Circular reference detected/)
    let deep: Record<string, unknown> = {}
    const top = deep
    for (let i = 0; i < 100; i++) deep = (deep.next = {}) as Record<string, unknown>
    deep.next = top
    assert.throws(() => dumps(top), /Circular reference detected/)
    delete deep.next
    assert.ok(dumps(top).startsWith('{"next": {"next": '))
    const shared = { s: 1 }
    assert.equal(dumps([shared, shared, { a: shared }]), '[{"s": 1}, {"s": 1}, {"a": {"s": 1}}]', 'the same object twice is not a cycle')
  })
})

describe('[send fast paths] the Redis envelope is written as text, the same bytes as serializeEnvelope(buildEnvelope(...))', () => {
  const base = (): OutgoingMessage => ({
    body: Buffer.from('[[1, 2], {}, {"callbacks": null, "errbacks": null, "chain": null, "chord": null}]'),
    properties: {
      contentType: 'application/json',
      contentEncoding: 'utf-8',
      headers: { lang: 'py', task: 'proj.add', id: 'abc', argsrepr: "('é', '😀')", timelimit: [null, 30], retries: 0 },
      deliveryMode: 2,
      priority: 0,
      correlationId: 'abc',
      replyTo: 'r-1',
    },
  })
  const variants: Array<[string, (m: OutgoingMessage) => void]> = [
    ['a task message', () => undefined],
    ['with an expiration', (m) => (m.properties.expiration = '30000')],
    ['transient, priority 7', (m) => Object.assign(m.properties, { deliveryMode: 1, priority: 7 })],
    [
      'no correlation id or reply_to',
      (m) => {
        delete m.properties.correlationId
        delete m.properties.replyTo
      },
    ],
    ['an empty body and headers', (m) => Object.assign(m, { body: Buffer.alloc(0) }, { properties: { ...m.properties, headers: {} } })],
    [
      'binary body, non-ASCII content type',
      (m) =>
        Object.assign(m, { body: Buffer.from([0, 255, 128, 10]) }, { properties: { ...m.properties, contentType: 'application/x-é' } }),
    ],
  ]
  for (const [what, change] of variants) {
    it(what, () => {
      const m = base()
      change(m)
      for (const [exchange, key] of [
        ['', 'celery'],
        ['ex"change', 'rk\u00e9'],
      ]) {
        const fast = encodeEnvelope(exchange!, key!, m)
        const tag = /"delivery_tag": "([^"]+)"/.exec(fast)![1]!
        const reference = buildEnvelope(exchange!, key!, m)
        reference.properties.delivery_tag = tag
        assert.equal(fast, serializeEnvelope(reference))
        // ASCII only: publish-batch.ts's LpushWire writes it as latin1, one byte a character.
        assert.match(fast, /^[\x20-\x7e]*$/)
      }
    })
  }
})
