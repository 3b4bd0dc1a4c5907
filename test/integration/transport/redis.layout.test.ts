// What the Redis transport actually leaves in Redis, read with a raw client as
// kombu's `redis_client` fixture does (spec §4), plus both directions against
// Python kombu/Celery 5.2.6 when the system Python has them.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { BrokerConnectionError } from '../../../src/transport/errors.js'
import { RedisKeys } from '../../../src/transport/redis/keys.js'
import { RedisTransport } from '../../../src/transport/redis/redis-transport.js'
import { UnackedStore } from '../../../src/transport/redis/consume/unacked.js'
import type { Delivery, MessageProperties, OutgoingMessage } from '../../../src/transport/transport.js'
import { brokerSkipReason, deleteRedisBindingsOfThisProcess, REDIS_URL, uniqueName, waitFor } from '../../helpers/brokers.js'
import { killRedisConnections } from './conformance/kill-connections.js'

const skip = await brokerSkipReason('redis')
const SEP = '\x06\x16'
const PY = '/usr/bin/python3'
const pyKombu = existsSync(PY) && spawnSync(PY, ['-c', 'import kombu, celery'], { timeout: 20_000 }).status === 0
const pySkip = pyKombu ? false : 'system Python with kombu/celery not found (/usr/bin/python3)'
/** The restore case uses its own database: a 1 s visibility timeout restores every stale unacked entry of a db. */
const RESTORE_DB_URL = REDIS_URL.replace(/\/\d*$/, '/15')
// kombu's fanout channels start with the database number (fanout_prefix): `/<db>.`.
const FANOUT_DB = `/${new URL(REDIS_URL).pathname.replace(/^\//, '') || '0'}.`

function msg(body: string, properties: Partial<MessageProperties> = {}): OutgoingMessage {
  return {
    body: Buffer.from(body),
    properties: { contentType: 'application/json', contentEncoding: 'utf-8', headers: {}, deliveryMode: 2, priority: 0, ...properties },
  }
}

function python(code: string): string {
  const r = spawnSync(PY, ['-c', code], { timeout: 30_000, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`python failed: ${r.stderr || r.error?.message}`)
  return r.stdout
}

/** JSON text with json.dumps's separators (kombu's, and tsq's own). */
const py = (v: unknown): string =>
  Array.isArray(v)
    ? `[${v.map(py).join(', ')}]`
    : v !== null && typeof v === 'object'
      ? `{${Object.entries(v)
          .map(([k, x]) => `${JSON.stringify(k)}: ${py(x)}`)
          .join(', ')}}`
      : JSON.stringify(v)

const allLists = (q: string): string[] => [q, `${q}${SEP}3`, `${q}${SEP}6`, `${q}${SEP}9`]

describe('redis transport layout (spec §4)', { skip }, () => {
  let raw: Redis
  const transports: RedisTransport[] = []
  const keys: string[] = []

  async function open(url = REDIS_URL, options = {}): Promise<RedisTransport> {
    const t = new RedisTransport(url, options)
    transports.push(t)
    await t.connect()
    return t
  }
  function queue(prefix = 'tsq-layout'): string {
    const q = uniqueName(prefix)
    keys.push(...allLists(q))
    return q
  }

  before(async () => {
    raw = new Redis(REDIS_URL, { connectionName: `tsq-${process.pid}-layout-raw` })
  })
  after(async () => {
    for (const t of transports) await t.close().catch(() => undefined)
    if (keys.length) await raw.del(...keys)
    raw.disconnect()
    await deleteRedisBindingsOfThisProcess(REDIS_URL, 'tsq-layout')
  })

  it("spec §1.9: a v2 task envelope is byte-identical to kombu's, but for the delivery tag", async () => {
    const q = queue()
    const headers = {
      lang: 'py',
      task: 'tasks.add',
      id: '890ef490-86e7-4d33-a5a9-b85b58e8c844',
      shadow: null,
      eta: null,
      expires: null,
      group: null,
      group_index: null,
      retries: 0,
      timelimit: [null, null],
      root_id: '890ef490-86e7-4d33-a5a9-b85b58e8c844',
      parent_id: null,
      argsrepr: '(2, 3)',
      kwargsrepr: '{}',
      origin: 'gen8434@vm',
      ignore_result: false,
    }
    const body = '[[2, 3], {}, {"callbacks": null, "errbacks": null, "chain": null, "chord": null}]'
    const t = await open()
    await t.publish('', q, msg(body, { headers, correlationId: headers.id, replyTo: '340c16d5-5550-3f23-92eb-f3c160381552' }))
    const [stored] = await raw.lrange(q, 0, -1)
    const tag = /"delivery_tag": "([0-9a-f-]{36})"/.exec(stored!)?.[1]
    assert.match(tag ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    const captured = `{"body": "W1syLCAzXSwge30sIHsiY2FsbGJhY2tzIjogbnVsbCwgImVycmJhY2tzIjogbnVsbCwgImNoYWluIjogbnVsbCwgImNob3JkIjogbnVsbH1d", "content-encoding": "utf-8", "content-type": "application/json", "headers": {"lang": "py", "task": "tasks.add", "id": "890ef490-86e7-4d33-a5a9-b85b58e8c844", "shadow": null, "eta": null, "expires": null, "group": null, "group_index": null, "retries": 0, "timelimit": [null, null], "root_id": "890ef490-86e7-4d33-a5a9-b85b58e8c844", "parent_id": null, "argsrepr": "(2, 3)", "kwargsrepr": "{}", "origin": "gen8434@vm", "ignore_result": false}, "properties": {"correlation_id": "890ef490-86e7-4d33-a5a9-b85b58e8c844", "reply_to": "340c16d5-5550-3f23-92eb-f3c160381552", "delivery_mode": 2, "delivery_info": {"exchange": "", "routing_key": "celery"}, "priority": 0, "body_encoding": "base64", "delivery_tag": "f74c00ff-73e3-4af4-a68c-38b7fdf1969b"}}`
    const expected = captured
      .replace('"routing_key": "celery"', `"routing_key": "${q}"`)
      .replace('f74c00ff-73e3-4af4-a68c-38b7fdf1969b', tag!)
    assert.equal(stored, expected)
  })

  it('spec §4.3: priorities go to the step lists; lower numbers are served first', async () => {
    const q = queue()
    const t = await open()
    for (const p of [9, 12, 6, 7, 3, 5, 0, 2, -1]) await t.publish('', q, msg(`p${p}`, { priority: p }))
    const lens = await Promise.all(allLists(q).map((k) => raw.llen(k)))
    assert.deepEqual(lens, [3, 2, 2, 2])
    const got: string[] = []
    const c = await t.consume(q, (d) => void got.push(d.body.toString()), { noAck: true })
    await waitFor(() => got.length === 9, { what: '9 deliveries' })
    await c.cancel()
    // Within a step, FIFO; across steps, 0 before 3 before 6 before 9.
    assert.deepEqual(got, ['p0', 'p2', 'p-1', 'p3', 'p5', 'p6', 'p7', 'p9', 'p12'])
  })

  it('spec §4.4: bindings are `rk<sep>pattern<sep>queue` members of `_kombu.binding.<exchange>`', async () => {
    const t = await open()
    const direct = uniqueName('tsq-layout-dx')
    const topic = uniqueName('tsq-layout-tx')
    const fan = uniqueName('tsq-layout-fx')
    keys.push(`_kombu.binding.${direct}`, `_kombu.binding.${topic}`, `_kombu.binding.${fan}`)
    const q = queue()
    await t.declareExchange({ name: direct, type: 'direct', durable: true, autoDelete: false })
    await t.declareExchange({ name: topic, type: 'topic', durable: true, autoDelete: false })
    await t.declareExchange({ name: fan, type: 'fanout', durable: false, autoDelete: false })
    await t.bindQueue(q, direct, 'celery')
    await t.bindQueue(q, topic, 'task.#')
    await t.bindQueue(q, fan, '')
    assert.deepEqual(await raw.smembers(`_kombu.binding.${direct}`), [`celery${SEP}${SEP}${q}`])
    assert.deepEqual(await raw.smembers(`_kombu.binding.${topic}`), [`task.#${SEP}^task\\..*?$${SEP}${q}`])
    assert.deepEqual(await raw.smembers(`_kombu.binding.${fan}`), [`${SEP}${SEP}${q}`])
    await t.publish(topic, 'task.succeeded', msg('via topic'))
    await t.publish(direct, 'celery', msg('via direct'))
    assert.equal(await raw.llen(q), 2)
    await t.deleteQueue(q)
    assert.deepEqual(await raw.smembers(`_kombu.binding.${direct}`), [])
    assert.equal(await raw.exists(q), 0)
  })

  it('spec §4.6: a delivery waits in unacked/unacked_index until acked', async () => {
    const q = queue()
    const t = await open()
    await t.publish('', q, msg('hold me'))
    const [envelope] = await raw.lrange(q, 0, -1)
    const got: Delivery[] = []
    await t.consume(q, (d) => void got.push(d), { prefetch: 1 })
    await waitFor(() => got.length === 1, { what: 'the delivery' })
    const tag = got[0]!.deliveryTag
    assert.equal(await raw.hget('unacked', tag), `[${envelope}, "", "${q}"]`)
    const score = Number(await raw.zscore('unacked_index', tag))
    assert.ok(Math.abs(score - Date.now() / 1000) < 600, 'score is the delivery time in unix seconds')
    await got[0]!.ack()
    assert.equal(await raw.hget('unacked', tag), null)
    assert.equal(await raw.zscore('unacked_index', tag), null)
  })

  it('a Redis that has lost its scripts (SCRIPT FLUSH; a restart that keeps nothing) still has each message claimed, once', async () => {
    const q = queue()
    const t = await open()
    const got: Delivery[] = []
    await t.consume(q, (d) => void got.push(d), { prefetch: 4 })
    await t.publish('', q, msg('before'))
    await waitFor(() => got.length === 1, { what: 'the first delivery' })
    await got[0]!.ack()
    await raw.script('FLUSH')
    for (const body of ['after-1', 'after-2', 'after-3']) await t.publish('', q, msg(body))
    await waitFor(() => got.length === 4, { what: 'the deliveries after the flush' })
    assert.deepEqual(
      got.map((d) => d.body.toString()),
      ['before', 'after-1', 'after-2', 'after-3'],
    )
    for (const d of got.slice(1)) assert.notEqual(await raw.hget('unacked', d.deliveryTag), null, 'recorded as unacked')
    for (const d of got.slice(1)) await d.ack()
    for (const d of got) assert.equal(await raw.hexists('unacked', d.deliveryTag), 0)
    assert.equal(await raw.llen(q), 0)
  })

  it("a wait or claim that Redis refuses (a queue's list holding a string) is reported once as a broker error while it lasts, and retried until it goes through", async () => {
    const q = queue()
    await raw.set(q, 'not a list')
    const t = await open()
    const errors: string[] = []
    t.on('error', (e: Error) => errors.push(e.message))
    const got: Delivery[] = []
    await t.consume(q, (d) => void got.push(d), { prefetch: 4 })
    await waitFor(() => errors.length > 0, { what: 'the refusal reported' })
    assert.match(errors[0]!, /^redis broker .*: taking messages: WRONGTYPE/)
    // The loop retries at most a second apart: several retries, one line.
    await new Promise((r) => setTimeout(r, 2500))
    assert.equal(errors.length, 1, errors.join('\n'))
    await raw.del(q)
    await t.publish('', q, msg('after the refusal'))
    await waitFor(() => got.length === 1, { what: 'the delivery once Redis takes the wait' })
    assert.equal(got[0]!.body.toString(), 'after the refusal')
    await got[0]!.ack()
  })

  it('a claim that meets a key of another type after popping (a priority list, the unacked index or hash) takes nothing: what it popped is back in place, in order, and nothing stays recorded', async () => {
    // Keys of its own (kombu's global_keyprefix): the unacked index and hash are broken on purpose here.
    const prefix = `${uniqueName('tsq-layout-undo')}:`
    const layout = new RedisKeys(0, { globalKeyprefix: prefix })
    const store = new UnackedStore(raw, async () => [], layout)
    const lists = layout.lists('q')
    const envelope = (tag: string) =>
      py({
        body: Buffer.from('{}').toString('base64'),
        'content-encoding': 'utf-8',
        'content-type': 'application/json',
        headers: {},
        properties: { delivery_info: { exchange: '', routing_key: 'q' }, delivery_tag: tag, body_encoding: 'base64', priority: 0 },
      })
    const record = lists.map(() => true)
    try {
      // Oldest first at the tail, as LPUSH leaves them.
      for (const tag of ['m1', 'm2', 'm3']) await raw.lpush(lists[0]!, envelope(tag))
      const queued = await raw.lrange(lists[0]!, 0, -1)
      const nothingRecorded = async () => {
        assert.deepEqual(await raw.lrange(lists[0]!, 0, -1), queued, 'the popped messages are back, in order')
        assert.equal(await raw.exists(layout.unacked), 0, 'nothing recorded in unacked')
        assert.equal(
          (await raw.type(layout.unackedIndex)) === 'zset' ? await raw.zcard(layout.unackedIndex) : 0,
          0,
          'nothing left in the index',
        )
      }
      // The next list in BRPOP order holds a string: met after the main list was popped.
      await raw.set(lists[1]!, 'not a list')
      await assert.rejects(store.claim(lists, record, 10), /WRONGTYPE/)
      await nothingRecorded()
      await raw.del(lists[1]!)
      // The index, then the hash, holding a string: met after every pop.
      await raw.set(layout.unackedIndex, 'not a sorted set')
      await assert.rejects(store.claim(lists, record, 10), /WRONGTYPE/)
      await raw.del(layout.unackedIndex)
      await nothingRecorded()
      await raw.set(layout.unacked, 'not a hash')
      await assert.rejects(store.claim(lists, record, 10), /WRONGTYPE/)
      await raw.del(layout.unacked)
      await nothingRecorded()
      // Fixed, the same claim takes each message once, oldest first, each recorded under its tag.
      const claimed = await store.claim(lists, record, 10)
      assert.deepEqual(
        claimed.map((c) => c.recordedAs),
        ['m1', 'm2', 'm3'],
      )
      assert.deepEqual(
        claimed.map((c) => c.raw),
        ['m1', 'm2', 'm3'].map(envelope),
      )
      assert.deepEqual(await raw.zrange(layout.unackedIndex, 0, -1), ['m1', 'm2', 'm3'])
      assert.equal(await raw.llen(lists[0]!), 0)
    } finally {
      await raw.del(...lists, layout.unacked, layout.unackedIndex)
    }
  })

  it('a restore (requeue, or the visibility pass) to a queue whose key holds another type changes nothing and fails; the pass still restores the other messages', async () => {
    const prefix = `${uniqueName('tsq-layout-restore-type')}:`
    const layout = new RedisKeys(0, { globalKeyprefix: prefix })
    const [good, bad] = [layout.lists('good')[0]!, layout.lists('bad')[0]!]
    // What kombu's binding table would answer: the routing key's own queue.
    const store = new UnackedStore(raw, async (_exchange, routingKey) => [routingKey === 'bad' ? bad : good], layout)
    const envelope = (tag: string, rk: string) =>
      py({
        body: Buffer.from('{}').toString('base64'),
        'content-encoding': 'utf-8',
        'content-type': 'application/json',
        headers: {},
        properties: { delivery_info: { exchange: '', routing_key: rk }, delivery_tag: tag, body_encoding: 'base64', priority: 0 },
      })
    try {
      await raw.lpush(good, envelope('g1', 'good'))
      await raw.lpush(bad, envelope('b1', 'bad'))
      assert.equal((await store.claim([good, bad], [true, true], 2)).length, 2)
      await raw.set(bad, 'not a list')
      // A requeue: refused, and b1 is still unacked, indexed, and nowhere else.
      await assert.rejects(store.restore('b1', { leftmost: true }), /WRONGTYPE .* stays unacked/)
      assert.notEqual(await raw.hget(layout.unacked, 'b1'), null)
      assert.notEqual(await raw.zscore(layout.unackedIndex, 'b1'), null)
      // The visibility pass (a 0 s timeout: both are stale) restores g1 and reports b1's refusal.
      await assert.rejects(store.restoreVisible(0), /WRONGTYPE/)
      assert.equal(await raw.llen(good), 1)
      assert.equal(await raw.hexists(layout.unacked, 'g1'), 0)
      assert.notEqual(await raw.hget(layout.unacked, 'b1'), null)
      // Once the key is a list again, the next pass restores b1 there.
      await raw.del(bad)
      assert.equal(await store.restoreVisible(0), 1)
      assert.equal(JSON.parse((await raw.lrange(bad, 0, -1))[0]!).properties.delivery_tag, 'b1')
      assert.equal(await raw.exists(layout.unacked), 0)
    } finally {
      await raw.del(good, bad, layout.unacked, layout.unackedIndex, layout.unackedMutex)
    }
  })

  it("spec §4.6: a claim records each message under its own properties' tag and delivery_info, however the text is written", async () => {
    const q = queue()
    const envelope = (tag: string, headers: Record<string, unknown> = {}) => ({
      body: Buffer.from('[[], {}, {}]').toString('base64'),
      'content-encoding': 'utf-8',
      'content-type': 'application/json',
      headers,
      properties: {
        delivery_mode: 2,
        delivery_info: { exchange: '', routing_key: q },
        priority: 0,
        body_encoding: 'base64',
        delivery_tag: tag,
      },
    })
    const texts = {
      'python-written': py(envelope('tag-py')),
      compact: JSON.stringify(envelope('tag-compact')),
      // A header holding keys of the same names must not be taken for the properties.
      'header-decoy-twice': py(envelope('tag-twice', { extra: { delivery_tag: 'decoy-1' } })),
      'header-decoy-once': py(envelope('tag-once', { extra: { delivery_tag: 'decoy-2' } })).replace(
        '"delivery_tag": "tag-once"',
        '"delivery_tag":"tag-once"',
      ),
    }
    const got = await consumeAll(q, Object.values(texts))
    assert.deepEqual(got.map((d) => d.deliveryTag).sort(), ['tag-compact', 'tag-once', 'tag-py', 'tag-twice'])
    for (const [tag, text] of [
      ['tag-py', texts['python-written']],
      ['tag-compact', texts.compact],
      ['tag-twice', texts['header-decoy-twice']],
      ['tag-once', texts['header-decoy-once']],
    ] as const) {
      assert.equal(await raw.hget('unacked', tag), `[${text}, "", "${q}"]`, tag)
      assert.notEqual(await raw.zscore('unacked_index', tag), null, tag)
    }
    for (const decoy of ['decoy-1', 'decoy-2']) {
      assert.equal(await raw.hexists('unacked', decoy), 0, decoy)
      assert.equal(await raw.zscore('unacked_index', decoy), null, decoy)
    }
    for (const d of got) await d.ack()
    for (const d of got) assert.equal(await raw.hexists('unacked', d.deliveryTag), 0)
  })

  it("spec §4.6: redelivered, escaped or reordered envelopes are recorded under their own tag, exchange and routing key, and the consumer's ack removes them", async () => {
    const q = queue()
    const body = Buffer.from('[[], {}, {}]').toString('base64')
    const envelope = (
      tag: unknown,
      info: Record<string, unknown> = { exchange: '', routing_key: q },
      headers: Record<string, unknown> = {},
    ) => ({
      body,
      'content-encoding': 'utf-8',
      'content-type': 'application/json',
      headers,
      properties: {
        correlation_id: 'c',
        reply_to: 'r',
        delivery_mode: 2,
        delivery_info: info,
        priority: 0,
        body_encoding: 'base64',
        delivery_tag: tag,
      },
    })
    const tail = (tag: string) =>
      `, "properties": {"delivery_info": {"exchange": "", "routing_key": "evil"}, "priority": 0, "body_encoding": "base64", "delivery_tag": "${tag}"}}`
    const texts: Record<string, string> = {
      // A header whose text looks like the properties' end is a string, not the properties.
      'tail-in-a-header': py(envelope('tag-a', undefined, { note: tail('decoy-3') })),
      // Restored once (kombu marks delivery_info): decoded, exchange and routing key as they are.
      redelivered: py(envelope('tag-b', { exchange: 'ex', routing_key: q, redelivered: true })),
      // The properties first: decoded.
      'properties-first': `{"properties": ${py(envelope('tag-d').properties)}, "body": "${body}", "headers": {}}`,
    }
    // Escapes in the routing key (a quote): decoded, and stored as JSON that reads back the same.
    texts.escaped = py(envelope('tag-c', { exchange: '', routing_key: 'r\u00e9/k"x' }))
    const got = await consumeAll(q, Object.values(texts))
    assert.deepEqual(got.map((d) => d.deliveryTag).sort(), ['tag-a', 'tag-b', 'tag-c', 'tag-d'])
    const stored = async (tag: string) => JSON.parse((await raw.hget('unacked', tag)) ?? 'null') as [unknown, string, string] | null
    assert.deepEqual(await stored('tag-a'), [JSON.parse(texts['tail-in-a-header']!), '', q])
    assert.equal(await raw.hexists('unacked', 'decoy-3'), 0)
    assert.deepEqual((await stored('tag-b'))?.slice(1), ['ex', q])
    assert.deepEqual((await stored('tag-c'))?.slice(1), ['', 'r\u00e9/k"x'])
    assert.deepEqual((await stored('tag-d'))?.slice(1), ['', q])
    for (const d of got) await d.ack()
    for (const d of got) assert.equal(await raw.hexists('unacked', d.deliveryTag), 0, d.deliveryTag)
    assert.equal(await raw.hexists('unacked', 'decoy-3'), 0)
  })

  it("spec §4.6: braces, slashes and non-ASCII in the properties' strings, a number or null where a string goes: recorded under the envelope's own tag, exchange and routing key", async () => {
    const q = queue()
    const body = Buffer.from('[[], {}, {}]').toString('base64')
    // The claim reads plain properties off the text and decodes the rest; a brace inside a string cuts a balanced match short.
    const env = (props: string) =>
      `{"body": "${body}", "content-encoding": "utf-8", "content-type": "application/json", "headers": {}, "properties": ${props}}`
    const texts: Record<string, [text: string, exchange: string, routingKey: string]> = {
      'brace-tag': [env(`{"delivery_tag": "brace}tag", "delivery_info": {"exchange": "", "routing_key": "${q}"}}`), '', q],
      'close-brace-reply-to': [
        env(`{"reply_to": "a}b", "delivery_info": {"exchange": "ex1", "routing_key": "${q}"}, "delivery_tag": "tag-reply"}`),
        'ex1',
        q,
      ],
      'open-brace-exchange': [env(`{"delivery_info": {"exchange": "e{x", "routing_key": "${q}"}, "delivery_tag": "tag-open"}`), 'e{x', q],
      'slash-exchange': [
        env(`{"delivery_info": {"exchange": "e/x/\u00e9", "routing_key": "${q}"}, "delivery_tag": "tag-slash"}`),
        'e/x/\u00e9',
        q,
      ],
      'null-exchange': [env(`{"delivery_info": {"exchange": null, "routing_key": "${q}"}, "delivery_tag": "tag-null"}`), '', q],
      'spaced-out': [
        env(`{ "delivery_info" : { "routing_key" : "${q}" , "exchange" : "ex2" } , "delivery_tag" : "tag-spaced" }`),
        'ex2',
        q,
      ],
    }
    const got = await consumeAll(
      q,
      Object.values(texts).map(([text]) => text),
    )
    assert.deepEqual(got.map((d) => d.deliveryTag).sort(), ['brace}tag', 'tag-null', 'tag-open', 'tag-reply', 'tag-slash', 'tag-spaced'])
    for (const d of got) {
      const [text, exchange, routingKey] = Object.values(texts).find(([t]) => t.includes(`"${d.deliveryTag}"`))!
      const stored = await raw.hget('unacked', d.deliveryTag)
      assert.ok(stored?.startsWith(`[${text}, `), d.deliveryTag)
      assert.deepEqual(JSON.parse(stored!), [JSON.parse(text), exchange, routingKey], d.deliveryTag)
    }
    for (const d of got) await d.ack()
    for (const d of got) assert.equal(await raw.hexists('unacked', d.deliveryTag), 0, d.deliveryTag)
  })

  it('spec §4.6: a tag that is not a string is recorded again under the tag the consumer acks by; text that only ends like an envelope is dropped, not left unacked', async () => {
    const q = queue()
    const body = Buffer.from('[[], {}, {}]').toString('base64')
    const numbered = `{"body": "${body}", "content-encoding": "utf-8", "content-type": "application/json", "headers": {}, "properties": {"delivery_mode": 2, "delivery_info": {"exchange": "", "routing_key": "${q}"}, "priority": 0, "body_encoding": "base64", "delivery_tag": 12345}}`
    const broken = `{"body": "${body}" "oops": 1, "properties": {"delivery_info": {"exchange": "", "routing_key": "${q}"}, "priority": 0, "body_encoding": "base64", "delivery_tag": "tag-broken"}}`
    await raw.lpush(q, numbered, broken)
    const t = await open()
    const errors: string[] = []
    t.on('error', (e: Error) => errors.push(e.message))
    const got: Delivery[] = []
    await t.consume(q, (d) => void got.push(d), { prefetch: 10 })
    await waitFor(() => got.length === 1 && errors.length === 1, { what: 'one delivery and one error' })
    assert.match(errors[0]!, /not JSON/)
    await waitFor(async () => (await raw.hexists('unacked', 'tag-broken')) === 0, { what: 'the unreadable message out of unacked' })
    // Recorded again under the tag the consumer acks by; the number's record goes.
    const tag = got[0]!.deliveryTag
    await waitFor(async () => (await raw.hexists('unacked', '12345')) === 0, { what: 'the record under the number gone' })
    assert.equal(await raw.hexists('unacked', tag), 1)
    await got[0]!.ack()
    assert.equal(await raw.hexists('unacked', tag), 0)
    assert.equal(await raw.zscore('unacked_index', tag), null)
    assert.equal(await raw.zscore('unacked_index', '12345'), null)
  })

  /** Pushes `texts` to `q` as other producers would, and takes them all with one acking consumer. */
  async function consumeAll(q: string, texts: string[]): Promise<Delivery[]> {
    for (const text of texts) await raw.lpush(q, text)
    const t = await open()
    const got: Delivery[] = []
    await t.consume(q, (d) => void got.push(d), { prefetch: 10 })
    await waitFor(() => got.length === texts.length, { what: `the ${texts.length} deliveries` })
    return got
  }

  /** A consumer of two fresh queues, named so that CLIENT LIST shows when its idle waits are on both. */
  async function idleOnTwoQueues(name: string) {
    const [first, second] = [queue(), queue()]
    const tsqName = `tsq-${process.pid}-layout-${name}`
    const t = await open(REDIS_URL, { connectionName: tsqName })
    const got: Delivery[] = []
    for (const q of [first, second]) await t.consume(q, (d) => void got.push(d), { prefetch: 20 })
    const waitingOnBoth = async () =>
      ((await raw.client('LIST')) as string).split('\n').filter((l) => l.includes(`name=${tsqName}-brpop `) && / cmd=blmove /.test(l))
        .length === 2
    await waitFor(waitingOnBoth, { what: 'tsq waiting on both queues' })
    return { first, second, tsqName, got, waitingOnBoth }
  }

  it("an idle consumer of several queues waits in line on each, as kombu's BRPOP over all of them does", async () => {
    // Redis hands a pushed message to the client that has waited longest on
    // that list. A rival BRPOP that starts waiting after tsq must lose to tsq
    // on the queue tsq consumes second, not only on the first.
    const { second, got } = await idleOnTwoQueues('lines')
    const rivalName = `tsq-${process.pid}-layout-rival`
    const rival = new Redis(REDIS_URL, { connectionName: rivalName })
    const blocked = async (name: string) =>
      ((await raw.client('LIST')) as string).split('\n').some((l) => l.includes(`name=${name} `) && / cmd=brpop /.test(l))
    let tsqWon = 0
    try {
      for (let round = 0; round < 10; round += 1) {
        const taken = rival.brpop(second, 5)
        await waitFor(() => blocked(rivalName), { what: 'the rival waiting' })
        await raw.lpush(
          second,
          JSON.stringify({
            body: '',
            'content-encoding': 'utf-8',
            'content-type': 'text/plain',
            headers: {},
            properties: {
              delivery_tag: `rival-${round}-${process.pid}`,
              delivery_info: { exchange: '', routing_key: second },
              body_encoding: 'base64',
              priority: 0,
              delivery_mode: 2,
            },
          }),
        )
        await waitFor(async () => got.length + (await raw.llen(second)) > tsqWon || !(await blocked(rivalName)), {
          what: 'someone taking the message',
        })
        if (got.length > tsqWon) {
          tsqWon += 1
          const id = Number(
            ((await raw.client('LIST')) as string)
              .split('\n')
              .find((l) => l.includes(`name=${rivalName} `))
              ?.match(/id=(\d+)/)?.[1],
          )
          await raw.client('UNBLOCK', id)
        }
        await taken
      }
    } finally {
      for (const d of got) await d.ack().catch(() => undefined)
      rival.disconnect()
    }
    assert.ok(tsqWon >= 7, `tsq took ${tsqWon} of 10 messages pushed to the second queue while a later BRPOP waited on it`)
  })

  it('after its connections are cut while it waits on two queues, an idle consumer takes from both again', async () => {
    const { first, second, tsqName, got, waitingOnBoth } = await idleOnTwoQueues('cut')
    await killRedisConnections(REDIS_URL, tsqName)
    await waitFor(waitingOnBoth, { what: 'tsq waiting on both queues again', timeoutMs: 15_000 })
    const publisher = await open()
    await publisher.publish('', first, msg('to the first'))
    await publisher.publish('', second, msg('to the second'))
    await waitFor(() => got.length === 2, { what: 'both deliveries', timeoutMs: 15_000 })
    assert.deepEqual(got.map((d) => d.body.toString()).sort(), ['to the first', 'to the second'])
    for (const d of got) await d.ack()
  })

  it('spec §4.6: restore_visible returns a message unacked past the visibility timeout', async () => {
    const q = uniqueName('tsq-layout-vt')
    const dbRaw = new Redis(RESTORE_DB_URL, { connectionName: `tsq-${process.pid}-layout-raw12` })
    try {
      const holder = await open(`${RESTORE_DB_URL}?visibility_timeout=1`, { restoreIntervalMs: 3_600_000 })
      await holder.publish('', q, msg('stale', { headers: { a: 1 } }))
      const got: Delivery[] = []
      await holder.consume(q, (d) => void got.push(d), { prefetch: 1 })
      await waitFor(() => got.length === 1, { what: 'the delivery' })
      assert.equal(await dbRaw.llen(q), 0)
      const restorer = await open(`${RESTORE_DB_URL}?visibility_timeout=1`, { restoreIntervalMs: 3_600_000 })
      await waitFor(async () => (await restorer.restoreVisible()) > 0 || (await dbRaw.llen(q)) > 0, { what: 'a restore' })
      const [back] = await dbRaw.lrange(q, 0, -1)
      const parsed = JSON.parse(back!) as { headers: Record<string, unknown>; properties: { delivery_info: Record<string, unknown> } }
      assert.deepEqual(parsed.headers, { a: 1, redelivered: true })
      assert.equal(parsed.properties.delivery_info.redelivered, true)
      assert.equal(await dbRaw.hget('unacked', got[0]!.deliveryTag), null)
    } finally {
      await dbRaw.del(...allLists(q))
      dbRaw.disconnect()
    }
  })

  it('spec §4.4/§4.5: fanout is PUBLISH on `/<db>.<exchange>` (+ `/<rk>`), consumed by PSUBSCRIBE', async () => {
    const exchange = uniqueName('tsq-layout-fan')
    keys.push(`_kombu.binding.${exchange}`)
    const sub = new Redis(REDIS_URL, { connectionName: `tsq-${process.pid}-layout-sub` })
    const heard: Array<[string, string]> = []
    sub.on('pmessage', (_p: string, channel: string, m: string) => heard.push([channel, m]))
    try {
      await sub.psubscribe(`${FANOUT_DB}${exchange}*`)
      const t = await open()
      await t.declareExchange({ name: exchange, type: 'fanout', durable: false, autoDelete: false })
      const q = queue()
      await t.declareQueue({ name: q, durable: false, exclusive: false, autoDelete: true })
      await t.bindQueue(q, exchange, '')
      const got: Delivery[] = []
      await t.consume(q, (d) => void got.push(d), { noAck: true })
      await t.publish(exchange, '', msg('no key'))
      await t.publish(exchange, 'worker.heartbeat', msg('keyed'))
      await waitFor(() => heard.length === 2 && got.length === 2, { what: 'both publishes heard' })
      assert.deepEqual(heard.map(([c]) => c).sort(), [`${FANOUT_DB}${exchange}`, `${FANOUT_DB}${exchange}/worker.heartbeat`].sort())
      assert.equal(await raw.llen(q), 0, 'fanout never stores')
      // A Python publisher's envelope on the channel reaches the consumer.
      const pyEnvelope = `{"body": "eyJhIjogMX0=", "content-encoding": "utf-8", "content-type": "application/json", "headers": {}, "properties": {"delivery_mode": 2, "delivery_info": {"exchange": "${exchange}", "routing_key": ""}, "priority": 0, "body_encoding": "base64", "delivery_tag": "97c17262-0257-4a43-aa55-b924d4065d82"}}`
      await raw.publish(`${FANOUT_DB}${exchange}`, pyEnvelope)
      await waitFor(() => got.length === 3, { what: 'the raw publish' })
      assert.equal(got[2]!.body.toString(), '{"a": 1}')
      assert.equal(got[2]!.queue, q)
    } finally {
      sub.disconnect()
    }
  })

  it('connect() to an unreachable broker rejects with one BrokerConnectionError line', async () => {
    const t = new RedisTransport('redis://127.0.0.1:1/0')
    await assert.rejects(t.connect(), (error: unknown) => {
      assert.ok(error instanceof BrokerConnectionError)
      assert.doesNotMatch(error.message, /\n/)
      return true
    })
    await t.close()
  })

  describe('against Python kombu 5.2.4', { skip: pySkip }, () => {
    it('consumes what kombu SimpleQueue.put wrote, and kombu reads what tsq wrote', async () => {
      const q = queue('tsq-layout-py')
      keys.push(`_kombu.binding.${q}`)
      python(`from kombu import Connection
c = Connection('${REDIS_URL}'); s = c.SimpleQueue('${q}'); s.put({'a': 1, 'u': '\\u00e9'}, headers={'h': 1.5}); c.close()`)
      const t = await open()
      const got: Delivery[] = []
      const consumer = await t.consume(q, (d) => void got.push(d), { prefetch: 1 })
      await waitFor(() => got.length === 1, { what: 'the kombu message' })
      await consumer.cancel()
      const d = got[0]!
      assert.equal(d.body.toString(), '{"a": 1, "u": "\\u00e9"}')
      assert.deepEqual(d.properties.headers, { h: 1.5 })
      assert.equal(d.exchange, q)
      assert.equal(d.routingKey, q)
      await d.ack()

      await t.publish('', q, msg('{"from": "tsq", "n": 2.5}', { headers: { x: 'é' }, priority: 0 }))
      const out = python(`import json
from kombu import Connection
c = Connection('${REDIS_URL}'); s = c.SimpleQueue('${q}'); m = s.get(timeout=5)
print(json.dumps({'payload': m.payload, 'headers': m.headers, 'tag': m.delivery_tag})); m.ack(); c.close()`)
      const seen = JSON.parse(out) as { payload: unknown; headers: unknown; tag: string }
      assert.deepEqual(seen.payload, { from: 'tsq', n: 2.5 })
      assert.deepEqual(seen.headers, { x: 'é' })
    })

    it('spec §1.9: Celery send_task writes the same bytes tsq writes for the same message', async () => {
      const q = queue('tsq-layout-celery')
      python(`from celery import Celery
app = Celery(broker='${REDIS_URL}')
app.send_task('tasks.add', (2, 3), queue='${q}', task_id='11111111-2222-3333-4444-555555555555')`)
      const [pyRaw] = await raw.lrange(q, 0, -1)
      await raw.del(q)
      const py = JSON.parse(pyRaw!) as {
        body: string
        headers: Record<string, never>
        properties: { correlation_id: string; reply_to: string; delivery_tag: string }
      }
      const t = await open()
      await t.publish('', q, {
        body: Buffer.from(py.body, 'base64'),
        properties: {
          contentType: 'application/json',
          contentEncoding: 'utf-8',
          headers: py.headers,
          deliveryMode: 2,
          priority: 0,
          correlationId: py.properties.correlation_id,
          replyTo: py.properties.reply_to,
        },
      })
      const [ours] = await raw.lrange(q, 0, -1)
      const tag = /"delivery_tag": "([0-9a-f-]{36})"/.exec(ours!)?.[1]
      assert.equal(ours, pyRaw!.replace(py.properties.delivery_tag, tag!))
    })
  })
})
