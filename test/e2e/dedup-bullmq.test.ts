// Deduplication at send against BullMQ on one Redis: each scenario's sends
// (test/helpers/dedup-scenarios.ts: simple, throttle, throttle with extend,
// debounce with and without extend, a debounce that replaces a delayed job,
// a send while the standing job already runs) are made at the same moments to
// a BullMQ queue and to a tsq worker, and the same labels run on both. Then
// `tsq dedup ls` lists a standing id with its task, `tsq dedup rm` frees it,
// and a send answered with the standing task's AsyncResult.
// tsq-test: slow 2
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Queue, Worker } from 'bullmq'
import { Redis } from 'ioredis'
import { createApp, type App, type Task } from '../../src/index.js'
import { brokerSkipReason, REDIS_URL, uniqueName } from '../helpers/brokers.js'
import { runTsq, startWorker, type SpawnedWorker } from '../helpers/cli.js'
import { DEDUP_SCENARIOS } from '../helpers/dedup-scenarios.js'
// @ts-expect-error: a plain JS fixture
import { defineDedupTasks } from '../fixtures/tasks/dedup-tasks.js'

const APP = 'test/fixtures/tasks/dedup-tasks.js'
const BROKER = REDIS_URL.replace(/\/\d*$/, '/8')
const BACKEND = REDIS_URL.replace(/\/\d*$/, '/9')
const skip = await brokerSkipReason('redis')

const sleepUntil = (t: number) => new Promise((r) => setTimeout(r, Math.max(0, t - Date.now())))

describe('deduplication: tsq and BullMQ run the same jobs', { skip, timeout: 300_000 }, () => {
  const queue = uniqueName('dedup')
  const bullQueueName = uniqueName('bull-dedup')
  let worker: SpawnedWorker
  let app: App
  let tasks: { run: Task }
  let redis: Redis
  let bullQueue: Queue
  let bullWorker: Worker
  const bullRan = new Map<string, string[]>()
  const lists: string[] = []

  before(async () => {
    const u = new URL(BROKER)
    const connection = { host: u.hostname, port: Number(u.port || 6379), db: Number(u.pathname.slice(1) || 0) }
    redis = new Redis(BACKEND)
    bullQueue = new Queue(bullQueueName, { connection })
    bullWorker = new Worker(
      bullQueueName,
      async (job) => {
        const { scenario, label, runMs } = job.data as { scenario: string; label: string; runMs: number }
        bullRan.set(scenario, [...(bullRan.get(scenario) ?? []), label])
        await new Promise((r) => setTimeout(r, runMs))
      },
      { connection, concurrency: 4 },
    )
    app = createApp({ name: 'dedup-test', broker: BROKER, resultBackend: BACKEND })
    tasks = defineDedupTasks(app)
    worker = await startWorker(
      [
        '-A',
        APP,
        '-b',
        BROKER,
        '--result-backend',
        BACKEND,
        '-Q',
        queue,
        '-P',
        'threads',
        '-c',
        '4',
        '-l',
        'INFO',
        '--without-mingle',
        '--without-gossip',
      ],
      { nodename: uniqueName('dedup') + '@h', readyTimeoutMs: 120_000, env: { TSQ_TEST_REDIS_URL: BACKEND } },
    )
    // The first run loads the task module into the pool's threads: not inside a scenario's timing.
    const warm = uniqueName('ran')
    lists.push(warm)
    await Promise.all([1, 2, 3, 4].map(async (n) => (await tasks.run.applyAsync([warm, `w${n}`, 0], {}, { queue })).get({ timeout: 60 })))
  })
  after(async () => {
    await worker?.stop('SIGKILL').catch(() => undefined)
    await bullWorker?.close().catch(() => undefined)
    await bullQueue?.obliterate({ force: true }).catch(() => undefined)
    await bullQueue?.close().catch(() => undefined)
    await app?.close().catch(() => undefined)
    if (redis) {
      if (lists.length) await redis.del(...lists).catch(() => undefined)
      redis.disconnect()
    }
  })

  for (const s of DEDUP_SCENARIOS) {
    it(s.name, async () => {
      const id = uniqueName('d')
      const list = uniqueName('ran')
      lists.push(list)
      const start = Date.now() + 100
      for (const send of s.sends) {
        await sleepUntil(start + send.at)
        await Promise.all([
          bullQueue.add(
            'run',
            { scenario: id, label: send.label, runMs: s.runMs },
            { deduplication: { id, ...s.bull.deduplication }, ...(s.bull.delay ? { delay: s.bull.delay } : {}) },
          ),
          tasks.run.applyAsync(
            [list, send.label, s.runMs],
            {},
            {
              queue,
              dedup: { id, ...s.dedup },
              ...(s.countdown !== undefined ? { countdown: s.countdown } : {}),
            },
          ),
        ])
      }
      const last = Math.max(...s.sends.map((x) => x.at))
      const delay = Math.max(s.bull.delay ?? 0, (s.dedup.ttl ?? 0) * 1000)
      await sleepUntil(start + last + delay + s.runMs + 2000)
      const tsqRan = await redis.lrange(list, 0, -1)
      const bull = bullRan.get(id) ?? []
      assert.deepEqual(
        [...tsqRan].sort(),
        [...bull].sort(),
        `tsq ran ${tsqRan.join(',')}; BullMQ ran ${bull.join(',')}\n${worker.output().slice(-3000)}`,
      )
      assert.deepEqual([...bull].sort(), s.runs)
    })
  }

  it('a deduplicated send answers with the standing task; tsq dedup ls lists it, rm frees it', async () => {
    const id = uniqueName('d')
    const list = uniqueName('ran')
    lists.push(list)
    const first = await tasks.run.applyAsync([list, 'a', 15_000], {}, { queue, dedup: { id } })
    const second = await tasks.run.applyAsync([list, 'b', 0], {}, { queue, dedup: { id } })
    assert.equal(second.id, first.id)
    const ls = await runTsq(['dedup', 'ls', '-b', BROKER, '--json'])
    assert.equal(ls.code, 0, ls.stderr)
    const row = (JSON.parse(ls.stdout) as Array<{ key: string; taskId: string; mode: string; ttlLeftS: number | null }>).find(
      (r) => r.key === `dedup.run:${id}`,
    )
    assert.deepEqual(row && [row.taskId, row.mode, row.ttlLeftS], [first.id, 'simple', null])
    const table = await runTsq(['dedup', 'ls', '-b', BROKER], { env: { NO_COLOR: '1' } })
    assert.match(table.stdout, new RegExp(`dedup\\.run:${id}.*simple.*${first.id}.*until it ends`))
    const rm = await runTsq(['dedup', 'rm', `dedup.run:${id}`, '-b', BROKER])
    assert.equal(rm.code, 0, rm.stderr)
    assert.equal((await runTsq(['dedup', 'rm', `dedup.run:${id}`, '-b', BROKER])).code, 64)
    const third = await tasks.run.applyAsync([list, 'c', 0], {}, { queue, dedup: { id } })
    assert.notEqual(third.id, first.id)
    assert.equal(await third.get({ timeout: 30 }), 'c')
    assert.equal(await first.get({ timeout: 60 }), 'a')
  })
})
