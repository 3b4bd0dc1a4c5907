// sendMany when the broker takes some messages and refuses the rest: its
// failure says message by message which sends the broker has (the ids it
// reports sent are exactly the ids in the queue, the rest refused, none
// unknown). Redis out of memory (maxmemory, noeviction, on a redis-server of
// the test's own): each refusal says "Redis is out of memory", and a worker
// started under OOM says so and exits, as Celery's worker exits with
// "Unrecoverable error: ResponseError('OOM command not allowed ...')"; a
// result the Redis backend cannot store says OOM too.
// RabbitMQ: a queue whose x-overflow is reject-publish nacks what is past
// x-max-length, and the publisher confirms tell which.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import amqplib from '../../../src/transport/amqp/amqplib.js'
import { Redis } from 'ioredis'
import { RedisResultBackend } from '../../../src/backends/redis-backend.js'
import { SendManyError, createApp, signature, type App } from '../../../src/index.js'
import { encodeResultMeta } from '../../../src/protocol/index.js'
import { AMQP_URL, brokerSkipReason, uniqueName } from '../../helpers/brokers.js'
import { runTsq } from '../../helpers/cli.js'
import type { GroupProcess } from '../../helpers/process-group.js'
import { hasRedisServer, startRedisServer } from '../../helpers/redis-server.js'
import { freePort } from '../../interop/helpers/tls-brokers.js'

const skip = hasRedisServer
  ? false
  : process.env.CI
    ? (() => {
        throw new Error('CI requires redis-server on PATH')
      })()
    : 'redis-server is not installed'

describe('Redis out of memory: honest batch outcomes and a worker that says OOM', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-redis-oom-'))
  let server: GroupProcess | undefined
  let url = ''
  let raw: Redis | undefined
  let app: App | undefined

  before(async () => {
    const port = await freePort()
    server = await startRedisServer(port, dir)
    url = `redis://127.0.0.1:${port}/0`
    raw = new Redis(url)
  })
  after(async () => {
    await app?.close().catch(() => undefined)
    raw?.disconnect()
    await server?.stopWith(() => process.kill(server!.pid, 'SIGTERM'), 10_000)
    rmSync(dir, { recursive: true, force: true })
  })

  it('sendMany: the sends reported sent are exactly the messages in the queue; the rest are refused, saying OOM', async () => {
    app = createApp({ name: 'oom', broker: url, conf: { task_publish_retry: false } })
    // Declared while there is room, so only the sends meet the limit.
    await app.sendTask('t.oom', [], {}, { queue: 'oomq' })
    await raw!.del('oomq')
    const used = Number(/used_memory:(\d+)/.exec(await raw!.info('memory'))![1])
    await raw!.config('SET', 'maxmemory', String(used + 256 * 1024))
    const n = 3000
    const pad = 'x'.repeat(1024)
    const error = await app.sendMany(Array.from({ length: n }, (_, i) => signature('t.oom', [i, pad], {}, { queue: 'oomq' }))).then(
      () => null,
      (e: unknown) => e,
    )
    assert.ok(error instanceof SendManyError, `sendMany was expected to fail under maxmemory: ${String(error)}`)
    const { outcomes } = error
    assert.equal(outcomes.length, n)
    assert.deepEqual(
      outcomes.map((o) => o.index),
      Array.from({ length: n }, (_, i) => i),
    )
    const queued = (await raw!.lrange('oomq', 0, -1)).map((m) => (JSON.parse(m) as { headers: { id: string } }).headers.id)
    const sent = outcomes.filter((o) => o.status === 'sent')
    const refused = outcomes.filter((o) => o.status === 'refused')
    assert.ok(sent.length > 0 && refused.length > 0, `${sent.length} sent, ${refused.length} refused`)
    assert.equal(sent.length + refused.length, n, 'none unknown: Redis answered every LPUSH')
    assert.deepEqual(new Set(queued), new Set(sent.map((o) => o.taskId)))
    assert.equal(queued.length, sent.length)
    assert.deepEqual(
      error.sent.map((r) => r.id),
      sent.map((o) => o.taskId),
    )
    for (const o of refused)
      assert.match(
        (o.error as Error).message,
        /^redis broker redis:\/\/127\.0\.0\.1:\d+\/0: publish to oomq: Redis is out of memory \(maxmemory\): OOM command not allowed when used memory > 'maxmemory'\.$/,
      )
    assert.match(
      error.message,
      new RegExp(
        `^${refused.length} of ${n} messages were not confirmed: ${sent.length} sent, ${refused.length} refused; first error: .*Redis is out of memory \\(maxmemory\\)`,
      ),
    )
  })

  it('a worker started under OOM says Redis is out of memory and exits', async () => {
    await raw!.config('SET', 'maxmemory', '1')
    const res = await runTsq(
      [
        'worker',
        '-A',
        'test/fixtures/tasks/interop-tasks.js',
        '-b',
        url,
        '-P',
        'threads',
        '-c',
        '1',
        '-n',
        'oom@h',
        '-Q',
        'oomw',
        '-l',
        'INFO',
      ],
      { timeoutMs: 90_000 },
    )
    const out = `${res.stdout}${res.stderr}`
    assert.notEqual(res.code, 0, out)
    assert.match(out, /Redis is out of memory \(maxmemory\): OOM command not allowed when used memory > 'maxmemory'\./, out)
  })

  it('a result the Redis backend cannot store under OOM says Redis is out of memory, not EXECABORT', async () => {
    await raw!.config('SET', 'maxmemory', '1')
    const backend = new RedisResultBackend(url)
    try {
      await assert.rejects(
        backend.store('oom-task', encodeResultMeta({ taskId: 'oom-task', status: 'SUCCESS', result: 1 }), 'SUCCESS'),
        (e: Error) => {
          assert.match(
            e.message,
            /^result backend redis:\/\/127\.0\.0\.1:\d+\/0: Redis is out of memory \(maxmemory\): OOM command not allowed/,
          )
          return true
        },
      )
    } finally {
      await backend.close()
    }
  })
})

describe('RabbitMQ nacks: honest batch outcomes from publisher confirms', { skip: await brokerSkipReason('amqp') }, () => {
  const queue = uniqueName('tsq-sendmany-nack')
  let app: App | undefined

  after(async () => {
    await app?.close().catch(() => undefined)
    const conn = await amqplib.connect(AMQP_URL)
    try {
      const ch = await conn.createChannel()
      await ch.deleteQueue(queue)
    } finally {
      await conn.close()
    }
  })

  it('a queue that holds 5 and refuses the rest: 5 sent, the rest refused (basic.nack), and the queue holds exactly the 5', async () => {
    app = createApp({
      name: 'nack',
      broker: AMQP_URL,
      conf: { task_queues: [{ name: queue, queue_arguments: { 'x-max-length': 5, 'x-overflow': 'reject-publish' } }] },
    })
    const n = 20
    const error = await app.sendMany(Array.from({ length: n }, (_, i) => signature('t.nack', [i], {}, { queue }))).then(
      () => null,
      (e: unknown) => e,
    )
    assert.ok(error instanceof SendManyError, `sendMany was expected to fail past x-max-length: ${String(error)}`)
    const sent = error.outcomes.filter((o) => o.status === 'sent')
    const refused = error.outcomes.filter((o) => o.status === 'refused')
    assert.equal(sent.length, 5)
    assert.equal(refused.length, n - 5)
    for (const o of refused) assert.match((o.error as Error).message, /the broker refused the message \(basic\.nack\)$/)
    const conn = await amqplib.connect(AMQP_URL)
    const queued: string[] = []
    try {
      const ch = await conn.createChannel()
      for (let m = await ch.get(queue, { noAck: true }); m; m = await ch.get(queue, { noAck: true }))
        queued.push(String(m.properties.headers?.id))
    } finally {
      await conn.close()
    }
    assert.deepEqual(new Set(queued), new Set(sent.map((o) => o.taskId)))
    assert.equal(queued.length, 5)
  })
})
