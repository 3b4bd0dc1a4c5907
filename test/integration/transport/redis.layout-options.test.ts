// broker_transport_options that change kombu's Redis layout (issue 30):
// global_keyprefix, sep, priority_steps, queue_order_strategy, fanout_prefix,
// fanout_patterns. What tsq leaves in Redis is read with a raw client, and
// Python kombu 5.2.4, given the same options, reads what tsq wrote and writes
// what tsq reads.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { RedisTransport } from '../../../src/transport/redis/redis-transport.js'
import type { RedisLayoutOptions } from '../../../src/transport/redis/options.js'
import type { Delivery, MessageProperties, OutgoingMessage } from '../../../src/transport/transport.js'
import { brokerSkipReason, REDIS_URL, uniqueName, waitFor } from '../../helpers/brokers.js'

const skip = await brokerSkipReason('redis')
const PY = '/usr/bin/python3'
const pyKombu = existsSync(PY) && spawnSync(PY, ['-c', 'import kombu'], { timeout: 20_000 }).status === 0
const pySkip = pyKombu ? false : 'system Python with kombu not found (/usr/bin/python3)'
const DB = new URL(REDIS_URL).pathname.replace(/^\//, '') || '0'

const PREFIX = `tsqkp-${process.pid}:`
const LAYOUT: RedisLayoutOptions = {
  globalKeyprefix: PREFIX,
  sep: '::',
  prioritySteps: [0, 5],
  fanoutPrefix: '/fx{db}.',
  fanoutPatterns: false,
  queueOrderStrategy: 'priority',
}
/** The same options as kombu takes them. */
const PY_OPTIONS = `{'global_keyprefix': '${PREFIX}', 'sep': '::', 'priority_steps': [0, 5], 'fanout_prefix': '/fx{db}.', 'fanout_patterns': False, 'queue_order_strategy': 'priority'}`

function msg(body: string, properties: Partial<MessageProperties> = {}): OutgoingMessage {
  return {
    body: Buffer.from(body),
    properties: { contentType: 'application/json', contentEncoding: 'utf-8', headers: {}, deliveryMode: 2, priority: 0, ...properties },
  }
}

function python(code: string): string {
  const r = spawnSync(PY, ['-c', code], { timeout: 60_000, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`python failed: ${r.stderr || r.error?.message}`)
  return r.stdout
}

describe('[broker_transport_options] redis layout options', { skip }, () => {
  let raw: Redis
  const transports: RedisTransport[] = []

  async function open(): Promise<RedisTransport> {
    const t = new RedisTransport(REDIS_URL, { layout: LAYOUT })
    transports.push(t)
    await t.connect()
    return t
  }

  before(() => {
    raw = new Redis(REDIS_URL, { connectionName: `tsq-${process.pid}-layout-options-raw` })
  })
  after(async () => {
    for (const t of transports) await t.close().catch(() => undefined)
    // Everything this file wrote is under its own prefix.
    const doomed = await raw.keys(`${PREFIX}*`)
    if (doomed.length) await raw.del(...doomed)
    raw.disconnect()
  })

  it('[global_keyprefix, sep, priority_steps] lists, bindings and unacked all under the prefix; nothing outside it', async () => {
    const q = uniqueName('tsq-lo')
    const x = uniqueName('tsq-lo-topic')
    const t = await open()
    await t.declareExchange({ name: x, type: 'topic', durable: true, autoDelete: false })
    await t.declareQueue({ name: q, durable: true, exclusive: false, autoDelete: false })
    await t.bindQueue(q, x, 'a.*')
    for (const p of [7, 1, 5, 0]) await t.publish(x, 'a.b', msg(`p${p}`, { priority: p }))
    assert.deepEqual(await raw.smembers(`${PREFIX}_kombu.binding.${x}`), [`a.*::^a\\..*?[^\\.]$::${q}`])
    assert.equal(await raw.llen(`${PREFIX}${q}`), 2)
    assert.equal(await raw.llen(`${PREFIX}${q}::5`), 2)
    assert.deepEqual(await raw.keys(`*${q}*`).then((ks) => ks.filter((k) => !k.startsWith(PREFIX))), [])
    const got: Delivery[] = []
    const c = await t.consume(q, (d) => void got.push(d), { prefetch: 10 })
    await waitFor(() => got.length === 4, { what: '4 deliveries' })
    // Step 0 (p1, p0) before step 5 (p7, p5), FIFO within a step.
    assert.deepEqual(
      got.map((d) => d.body.toString()),
      ['p1', 'p0', 'p7', 'p5'],
    )
    assert.equal(await raw.hlen(`${PREFIX}unacked`), 4)
    assert.equal(await raw.zcard(`${PREFIX}unacked_index`), 4)
    for (const d of got) await d.ack()
    await waitFor(async () => (await raw.hlen(`${PREFIX}unacked`)) === 0, { what: 'acks' })
    assert.equal(await raw.zcard(`${PREFIX}unacked_index`), 0)
    await c.cancel()
    assert.equal(await raw.zscore('unacked_index', got[0]!.deliveryTag), null, 'nothing in the unprefixed index')
  })

  it('[fanout_prefix, fanout_patterns] fanout channels are <prefix>/fx<db>.<exchange>, without the routing key', async () => {
    const exchange = uniqueName('tsq-lo-fan')
    const sub = new Redis(REDIS_URL, { connectionName: `tsq-${process.pid}-layout-options-sub` })
    const heard: string[] = []
    sub.on('pmessage', (_p: string, channel: string) => heard.push(channel))
    try {
      await sub.psubscribe(`*${exchange}*`)
      const t = await open()
      await t.declareExchange({ name: exchange, type: 'fanout', durable: false, autoDelete: false })
      const q = uniqueName('tsq-lo-fq')
      await t.declareQueue({ name: q, durable: false, exclusive: false, autoDelete: true })
      await t.bindQueue(q, exchange, '')
      const got: Delivery[] = []
      await t.consume(q, (d) => void got.push(d), { noAck: true })
      await t.publish(exchange, 'worker.heartbeat', msg('keyed'))
      await waitFor(() => heard.length === 1 && got.length === 1, { what: 'the publish heard' })
      assert.deepEqual(heard, [`${PREFIX}/fx${DB}.${exchange}`])
    } finally {
      sub.disconnect()
    }
  })

  describe('against Python kombu 5.2.4 with the same transport options', { skip: pySkip }, () => {
    it('kombu reads what tsq wrote, in its priority order, and tsq reads what kombu wrote', async () => {
      const q = uniqueName('tsq-lo-py')
      const t = await open()
      for (const p of [6, 2, 9]) await t.publish('', q, msg(`{"p": ${p}}`, { priority: p }))
      const out = python(`import json
from kombu import Connection
c = Connection('${REDIS_URL}', transport_options=${PY_OPTIONS}); s = c.SimpleQueue('${q}')
got = []
for _ in range(3):
    m = s.get(timeout=5); got.append(m.payload['p']); m.ack()
s.put({'from': 'py'}, priority=8); s.put({'from': 'py0'}, priority=0); c.close()
print(json.dumps(got))`)
      assert.deepEqual(JSON.parse(out), [2, 6, 9])
      assert.equal(await raw.llen(`${PREFIX}${q}::5`), 1)
      assert.equal(await raw.llen(`${PREFIX}${q}`), 1)
      const got: Delivery[] = []
      const c = await t.consume(q, (d) => void got.push(d), { noAck: true })
      await waitFor(() => got.length === 2, { what: "kombu's two messages" })
      await c.cancel()
      assert.deepEqual(
        got.map((d) => JSON.parse(d.body.toString()) as unknown),
        [{ from: 'py0' }, { from: 'py' }],
      )
    })

    it("kombu's fanout publish reaches a tsq fanout consumer on the same options", async () => {
      const exchange = uniqueName('tsq-lo-pyfan')
      const t = await open()
      await t.declareExchange({ name: exchange, type: 'fanout', durable: false, autoDelete: false })
      const q = uniqueName('tsq-lo-pyfq')
      await t.declareQueue({ name: q, durable: false, exclusive: false, autoDelete: true })
      await t.bindQueue(q, exchange, '')
      const got: Delivery[] = []
      await t.consume(q, (d) => void got.push(d), { noAck: true })
      python(`from kombu import Connection, Exchange
c = Connection('${REDIS_URL}', transport_options=${PY_OPTIONS})
ex = Exchange('${exchange}', type='fanout')
c.Producer().publish({'n': 1}, exchange=ex, routing_key='some.key', declare=[ex]); c.close()`)
      await waitFor(() => got.length === 1, { what: "kombu's fanout message" })
      assert.deepEqual(JSON.parse(got[0]!.body.toString()), { n: 1 })
    })
  })
})
