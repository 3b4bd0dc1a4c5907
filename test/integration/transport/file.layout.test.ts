// The embedded file broker's own guarantees, checked on disk: envelope format,
// name escaping, routing from files, priority, TTL and expiry, auto-delete and
// handing claims back on close. Crash cases with child processes are in
// file.crash.test.ts.
import assert from 'node:assert/strict'
import { readFile, readdir, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { waitFor } from '../../helpers/brokers.js'
import { escapeName, unescapeName } from '../../../src/transport/file/names.js'
import { brokerDir, collect, message, openTransport, queueSpec, sleep } from './fixtures/file-kit.js'

const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  )

describe('file transport layout', () => {
  it('escapes entity names readably and reversibly', () => {
    for (const name of ['celery', 'w1@vm.celery.pidbox', 'a/b c', '..', '.hidden', 'ünï~%', '']) {
      const escaped = escapeName(name)
      assert.match(escaped, /^[A-Za-z0-9_@.%-]+$/)
      assert.ok(!escaped.startsWith('.'))
      assert.equal(unescapeName(escaped), name)
    }
    assert.equal(escapeName('w1@vm.celery.pidbox'), 'w1@vm.celery.pidbox')
  })

  it('stores a published message as a kombu-style envelope in ready/', async (t) => {
    const dir = await brokerDir(t)
    const tr = await openTransport(t, dir)
    await tr.declareQueue(queueSpec('w1@vm.celery.pidbox'))
    await tr.publish(
      '',
      'w1@vm.celery.pidbox',
      message('{"x":1}', { contentType: 'application/json', correlationId: 'c1', replyTo: 'r1', headers: { task: 't' } }),
    )
    const ready = join(dir, 'queues', 'w1@vm.celery.pidbox', 'ready')
    const files = await readdir(ready)
    assert.equal(files.length, 1)
    const env = JSON.parse(await readFile(join(ready, files[0]!), 'utf8')) as Record<string, unknown>
    assert.deepEqual(Object.keys(env), ['body', 'content-encoding', 'content-type', 'headers', 'properties'])
    assert.equal(Buffer.from(env.body as string, 'base64').toString(), '{"x":1}')
    const props = env.properties as Record<string, unknown>
    assert.deepEqual(props.delivery_info, { exchange: '', routing_key: 'w1@vm.celery.pidbox' })
    assert.equal(props.correlation_id, 'c1')
    assert.equal(props.body_encoding, 'base64')
    assert.match(props.delivery_tag as string, /^[0-9a-f-]{36}$/)
    assert.equal((await tr.declareQueue(queueSpec('w1@vm.celery.pidbox'))).messageCount, 1)
  })

  it('creates the queue on a default-exchange publish, drops publishes nothing routes', async (t) => {
    const dir = await brokerDir(t)
    const tr = await openTransport(t, dir)
    await tr.publish('', 'not-yet-declared', message('early'))
    assert.equal((await tr.declareQueue(queueSpec('not-yet-declared'))).messageCount, 1)
    await tr.publish('no-such-exchange', 'k', message('lost'))
    await tr.declareExchange({ name: 'ex', type: 'direct', durable: false, autoDelete: false })
    await tr.publish('ex', 'unbound', message('lost'))
    assert.equal(await tr.purge('not-yet-declared'), 1)
  })

  it('routes direct, topic and fanout from bindings on disk, seen by another process', async (t) => {
    const dir = await brokerDir(t)
    const a = await openTransport(t, dir)
    const b = await openTransport(t, dir)
    for (const q of ['q1', 'q2', 'q3']) await a.declareQueue(queueSpec(q))
    await a.declareExchange({ name: 'd', type: 'direct', durable: false, autoDelete: false })
    await a.declareExchange({ name: 't', type: 'topic', durable: false, autoDelete: false })
    await a.declareExchange({ name: 'f', type: 'fanout', durable: false, autoDelete: false })
    await a.bindQueue('q1', 'd', 'k1')
    await a.bindQueue('q1', 't', 'worker.*')
    await a.bindQueue('q2', 't', 'task.#')
    await a.bindQueue('q2', 'f', '')
    await a.bindQueue('q3', 'f', 'ignored')
    // b routes with a's bindings: nothing is kept in a's memory only.
    await b.publish('d', 'k1', message('direct'))
    await b.publish('t', 'worker.online', message('topic-star'))
    await b.publish('t', 'worker.online.extra', message('nomatch'))
    await b.publish('t', 'task', message('topic-hash-zero'))
    await b.publish('t', 'task.sent.x', message('topic-hash-many'))
    await b.publish('f', 'anything', message('fan'))
    const q1 = await collect(a, 'q1')
    const q2 = await collect(a, 'q2')
    const q3 = await collect(a, 'q3')
    await waitFor(() => q1.received.length === 2 && q2.received.length === 3 && q3.received.length === 1, { what: 'routed messages' })
    assert.deepEqual(q1.bodies().sort(), ['direct', 'topic-star'])
    assert.deepEqual(q2.bodies().sort(), ['fan', 'topic-hash-many', 'topic-hash-zero'])
    assert.deepEqual(q3.bodies(), ['fan'])
    assert.equal(q3.received[0]!.exchange, 'f')
    assert.equal(q3.received[0]!.routingKey, 'anything')
  })

  it('refuses to redeclare an exchange with another type', async (t) => {
    const tr = await openTransport(t, await brokerDir(t))
    await tr.declareExchange({ name: 'x', type: 'direct', durable: false, autoDelete: false })
    await assert.rejects(tr.declareExchange({ name: 'x', type: 'fanout', durable: false, autoDelete: false }), {
      code: 'PRECONDITION_FAILED',
    })
  })

  it('delivers higher priority first, FIFO within a priority', async (t) => {
    const tr = await openTransport(t, await brokerDir(t))
    await tr.declareQueue(queueSpec('prio', { 'x-max-priority': 10 }))
    for (const [body, priority] of [
      ['low-1', 0],
      ['high-1', 9],
      ['low-2', 0],
      ['mid', 5],
      ['high-2', 9],
    ] as const) {
      await tr.publish('', 'prio', message(body, { priority }))
    }
    const c = await collect(tr, 'prio', { prefetch: 1 })
    await waitFor(() => c.received.length === 5, { what: '5 deliveries' })
    assert.deepEqual(c.bodies(), ['high-1', 'high-2', 'mid', 'low-1', 'low-2'])
  })

  it('[x-message-ttl] drops messages older than the TTL at claim time', async (t) => {
    const tr = await openTransport(t, await brokerDir(t))
    // Generous TTLs: the fresh messages must be claimed within them even on a loaded machine.
    await tr.declareQueue(queueSpec('ttl', { 'x-message-ttl': 500 }))
    await tr.declareQueue(queueSpec('exp'))
    await tr.publish('', 'ttl', message('stale'))
    await tr.publish('', 'exp', message('stale-by-expiration', { expiration: '100' }))
    await tr.publish('', 'exp', message('no-expiration'))
    await sleep(700)
    const ttl = await collect(tr, 'ttl')
    const exp = await collect(tr, 'exp')
    await tr.publish('', 'ttl', message('fresh'))
    await waitFor(() => ttl.received.length >= 1 && exp.received.length >= 1, { what: 'the fresh messages' })
    await sleep(100)
    assert.deepEqual(ttl.bodies(), ['fresh'])
    assert.deepEqual(exp.bodies(), ['no-expiration'])
  })

  it('[x-expires] a queue nobody uses is deleted by whichever process sweeps', async (t) => {
    const dir = await brokerDir(t)
    const a = await openTransport(t, dir)
    const b = await openTransport(t, dir)
    await a.declareQueue(queueSpec('reply-q', { 'x-expires': 200, 'x-message-ttl': 300_000 }))
    await a.declareQueue(queueSpec('kept', { 'x-expires': 200 }))
    // b consumes `kept` (so it sweeps, and keeps `kept` in use); nobody uses `reply-q`.
    await b.declareQueue(queueSpec('busy'))
    await collect(b, 'busy')
    await collect(b, 'kept')
    await waitFor(async () => !(await exists(join(dir, 'queues', 'reply-q'))), { what: 'reply-q to expire' })
    assert.ok(await exists(join(dir, 'queues', 'kept', 'ready')))
  })

  it('[autoDelete] the queue goes with its last consumer', async (t) => {
    const dir = await brokerDir(t)
    const tr = await openTransport(t, dir)
    await tr.declareQueue(queueSpec('auto', {}, true))
    const one = await collect(tr, 'auto')
    const two = await collect(tr, 'auto')
    await one.consumer.cancel()
    assert.ok(await exists(join(dir, 'queues', 'auto')))
    await two.consumer.cancel()
    assert.ok(!(await exists(join(dir, 'queues', 'auto'))))
  })

  it('respects prefetch and hands claims back on close, marked redelivered', async (t) => {
    const dir = await brokerDir(t)
    const a = await openTransport(t, dir)
    await a.declareQueue(queueSpec('work'))
    for (let i = 0; i < 5; i++) await a.publish('', 'work', message(`m${i}`))
    const held = await collect(a, 'work', { prefetch: 2, ack: false })
    await waitFor(() => held.received.length === 2, { what: 'two held deliveries' })
    await sleep(100)
    assert.equal(held.received.length, 2)
    assert.equal((await readdir(join(dir, 'queues', 'work', 'claimed', a.ownerId))).length, 2)
    await a.close()
    const b = await openTransport(t, dir)
    const c = await collect(b, 'work')
    await waitFor(() => c.received.length === 5, { what: 'all five after close' })
    assert.deepEqual(c.bodies(), ['m0', 'm1', 'm2', 'm3', 'm4'])
    assert.deepEqual(
      c.received.map((d) => d.redelivered),
      [true, true, false, false, false],
    )
  })

  it('[requeueUnacked: false] leaves claims for the next sweeper to restore', async (t) => {
    const dir = await brokerDir(t)
    const a = await openTransport(t, dir)
    await a.declareQueue(queueSpec('late'))
    await a.publish('', 'late', message('kept'))
    const held = await collect(a, 'late', { prefetch: 1, ack: false })
    await waitFor(() => held.received.length === 1, { what: 'held delivery' })
    await a.close({ requeueUnacked: false })
    assert.equal((await readdir(join(dir, 'queues', 'late', 'claimed', a.ownerId))).length, 1)
    const b = await openTransport(t, dir)
    const c = await collect(b, 'late')
    await waitFor(() => c.received.length === 1, { what: 'restored delivery' })
    assert.equal(c.received[0]!.redelivered, true)
  })

  it('reject: requeue comes back redelivered, no requeue is gone', async (t) => {
    const tr = await openTransport(t, await brokerDir(t))
    await tr.declareQueue(queueSpec('rej'))
    await tr.publish('', 'rej', message('a'))
    await tr.publish('', 'rej', message('b'))
    const seen: string[] = []
    await tr.consume(
      'rej',
      async (d) => {
        seen.push(`${d.body}:${d.redelivered}`)
        if (d.body.toString() === 'a' && !d.redelivered) await d.reject({ requeue: true })
        else if (d.body.toString() === 'b') await d.reject({ requeue: false })
        else await d.ack()
      },
      { prefetch: 1 },
    )
    await waitFor(() => seen.length === 3, { what: 'three deliveries' })
    assert.deepEqual(seen, ['a:false', 'a:true', 'b:false'])
    assert.equal((await tr.declareQueue(queueSpec('rej'))).messageCount, 0)
  })

  it('two consumers in different transports never get the same message', async (t) => {
    const dir = await brokerDir(t)
    const a = await openTransport(t, dir)
    const b = await openTransport(t, dir)
    await a.declareQueue(queueSpec('shared'))
    const ca = await collect(a, 'shared', { prefetch: 3 })
    const cb = await collect(b, 'shared', { prefetch: 3 })
    for (let i = 0; i < 200; i++) await a.publish('', 'shared', message(`m${i}`))
    await waitFor(() => ca.received.length + cb.received.length === 200, { what: '200 deliveries' })
    const all = [...ca.bodies(), ...cb.bodies()]
    assert.equal(new Set(all).size, 200)
  })
})

describe('file transport errors', () => {
  it('an unusable broker folder is a connection error naming the folder', async (t) => {
    const { FileTransport } = await import('../../../src/transport/file/file-transport.js')
    // A folder below a plain file cannot exist (ENOTDIR). Not /proc: Node 20's recursive mkdir spins there.
    const file = join(await brokerDir(t), 'plain-file')
    await writeFile(file, '')
    const bad = join(file, 'broker')
    const tr = new FileTransport(bad)
    await assert.rejects(tr.connect(), (err: Error & { code?: string }) => err.code === 'BROKER_UNREACHABLE' && err.message.includes(bad))
    await tr.close()
  })

  it('calls before connect or after close say so', async (t) => {
    const { FileTransport } = await import('../../../src/transport/file/file-transport.js')
    const tr = new FileTransport(await brokerDir(t))
    await assert.rejects(tr.publish('', 'q', message('x')), { code: 'TRANSPORT_CLOSED' })
    await tr.connect()
    await tr.close()
    await assert.rejects(tr.declareQueue(queueSpec('q')), { code: 'TRANSPORT_CLOSED' })
  })
})
