// A worker already running when its Redis broker reaches maxmemory (noeviction,
// on a redis-server of the test's own): the tasks it is running finish and are
// acked all the same (an ack only frees memory, and Redis refuses it only
// inside a MULTI), so once memory is freed none is delivered again: each ran
// exactly once, counted in another Redis. Results refused under OOM are logged
// as OOM, the worker goes on and takes new tasks once there is room again.
// Below the worker, the same for the unacked store: standalone acks, acks
// riding a claim and requeues land under OOM.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { createApp, type App } from '../../../src/index.js'
import { RedisKeys } from '../../../src/transport/redis/keys.js'
import { UnackedStore } from '../../../src/transport/redis/consume/unacked.js'
import { REDIS_URL, uniqueName } from '../../helpers/brokers.js'
import { startWorker, type SpawnedWorker } from '../../helpers/cli.js'
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
const COUNTS_URL = process.env.TSQ_LOSS_REDIS_URL ?? REDIS_URL

async function waitFor(what: string, check: () => Promise<boolean>, output: () => string = () => '', timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${output()}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe('Redis broker out of memory under a running worker', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-redis-oom-run-'))
  let server: GroupProcess | undefined
  let url = ''
  let raw: Redis | undefined
  let counts: Redis | undefined
  let app: App | undefined
  let worker: SpawnedWorker | undefined
  const key = uniqueName('tsq-oom-runs')

  before(async () => {
    const port = await freePort()
    server = await startRedisServer(port, dir)
    url = `redis://127.0.0.1:${port}/0`
    raw = new Redis(url)
    counts = new Redis(COUNTS_URL)
  })
  after(async () => {
    await worker?.stop()
    await app?.close().catch(() => undefined)
    await counts?.del(`${key}:runs`, `${key}:started`, `${key}:done`, `${key}:gate`).catch(() => undefined)
    counts?.disconnect()
    raw?.disconnect()
    await server?.stopWith(() => process.kill(server!.pid, 'SIGTERM'), 10_000)
    rmSync(dir, { recursive: true, force: true })
  })

  it('tasks running when Redis hits maxmemory are acked and run once; the worker says OOM and goes on once memory is freed', async () => {
    await raw!.config('SET', 'maxmemory', '0')
    const queue = uniqueName('tsq-oomq')
    const n = 4
    // A short visibility timeout: an unacked message would be delivered again soon after memory is freed.
    worker = await startWorker(
      [
        '-A',
        'test/fixtures/tasks/oom-tasks.js',
        '-b',
        url,
        '--result-backend',
        url,
        '-P',
        'solo',
        '-c',
        String(n),
        '-Q',
        queue,
        '-l',
        'INFO',
        '--without-mingle',
        '--without-gossip',
      ],
      {
        nodename: 'oomrun@h',
        env: { TSQ_LOSS_REDIS_URL: COUNTS_URL, TSQ_OOM_VISIBILITY: '2' },
      },
    )
    app = createApp({ name: 'oomsend', broker: url, resultBackend: url, conf: { task_publish_retry: false } })
    const ids: string[] = []
    for (let i = 0; i < n; i += 1) ids.push((await app.sendTask('oom.gated', [key], {}, { queue })).id)
    await waitFor(`${n} tasks started`, async () => (await counts!.scard(`${key}:started`)) === n, worker.output)

    // Out of memory while they run. A limit of 1 byte: one just under what Redis
    // holds is soon above it again, as Redis frees client buffers.
    await raw!.config('SET', 'maxmemory', '1')
    await assert.rejects(raw!.set('probe', '1'), /^ReplyError: OOM /)

    await counts!.set(`${key}:gate`, '1')
    await waitFor(`${n} tasks done`, async () => (await counts!.scard(`${key}:done`)) === n, worker.output)
    // Every ack lands while Redis is still out of memory: nothing is left to deliver again.
    await waitFor('the acks', async () => (await raw!.hlen('unacked')) === 0 && (await raw!.zcard('unacked_index')) === 0, worker.output)
    await waitFor(
      'the refused results said',
      async () => ids.every((id) => worker!.output().includes(`Could not store the SUCCESS result of oom.gated[${id}]`)),
      worker.output,
    )
    for (const id of ids) {
      assert.match(
        worker.output(),
        new RegExp(
          `Could not store the SUCCESS result of oom\\.gated\\[${id}\\]: result backend redis://127\\.0\\.0\\.1:\\d+/0: Redis is out of memory \\(maxmemory\\): OOM command not allowed`,
        ),
      )
    }
    assert.equal(await raw!.exists(...ids.map((id) => `celery-task-meta-${id}`)), 0)

    // Room again: a visibility-timeout pass with no timeout at all finds nothing
    // to deliver again; the worker takes a new task (and stores its result).
    await raw!.config('SET', 'maxmemory', '0')
    const restorer = new Redis(url)
    try {
      assert.equal(await new UnackedStore(restorer, async () => [queue], new RedisKeys(0)).restoreVisible(0), 0)
    } finally {
      restorer.disconnect()
    }
    const late = await app.sendTask('oom.gated', [key], {}, { queue })
    assert.equal(await late.get({ timeout: 60 }), late.id)
    const runs = await counts!.hgetall(`${key}:runs`)
    assert.deepEqual(runs, Object.fromEntries([...ids, late.id].map((id) => [id, '1'])))
    assert.doesNotMatch(worker.output(), /Could not ack/)
    assert.equal(await worker.stop(), 0)
  })

  it('unacked store: standalone acks, acks riding a claim and requeues land under OOM; a claim under OOM still records what it takes', async () => {
    await raw!.config('SET', 'maxmemory', '0')
    await raw!.flushdb()
    const keys = new RedisKeys(0)
    const conn = new Redis(url)
    try {
      const store = new UnackedStore(conn, async () => ['q'], keys)
      const envelope = (tag: string) =>
        JSON.stringify({ body: '', headers: {}, properties: { delivery_tag: tag, delivery_info: { exchange: '', routing_key: 'q' } } })
      for (const tag of ['a', 'b', 'c']) await store.add(tag, envelope(tag), '', 'q')
      await conn.rpush('q', envelope('d'))
      await raw!.config('SET', 'maxmemory', '1')
      await assert.rejects(raw!.set('probe', '1'), /^ReplyError: OOM /)

      await store.remove('a')
      assert.equal(await raw!.hexists(keys.unacked, 'a'), 0)
      assert.equal(await raw!.zscore(keys.unackedIndex, 'a'), null)
      // Both in one turn: the ack of b rides the claim.
      const ack = store.remove('b')
      const claimed = await store.claim(['q'], [true])
      await ack
      assert.deepEqual(
        claimed.map((c) => c.recordedAs),
        ['d'],
      )
      assert.deepEqual((await raw!.hkeys(keys.unacked)).sort(), ['c', 'd'])
      assert.deepEqual((await raw!.zrange(keys.unackedIndex, 0, -1)).sort(), ['c', 'd'])
      // A reject with requeue (kombu's restore_by_tag) goes back to its queue all the same.
      assert.equal(await store.restore('c', { leftmost: true }), true)
      assert.deepEqual(await raw!.hkeys(keys.unacked), ['d'])
      assert.equal(
        (JSON.parse((await raw!.lrange('q', 0, -1))[0]!) as { properties: { delivery_tag: string } }).properties.delivery_tag,
        'c',
      )
    } finally {
      await raw!.config('SET', 'maxmemory', '0')
      conn.disconnect()
    }
  })
})
