// A Python client (Celery 5.2.6's send_task) sets the `tsq_dedup` header by
// hand and a tsq worker deduplicates on receipt: in simple mode the duplicates
// received while the first runs are discarded (stored REVOKED) and a send after
// it ended runs; in throttle mode for the ttl; in debounce mode the worker
// holds each for the ttl from its receipt and only the last one received
// within the window runs.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { createApp, type App } from '../../src/index.js'
import { brokerSkipReason, REDIS_URL, uniqueName } from '../helpers/brokers.js'
import { startWorker, type SpawnedWorker } from '../helpers/cli.js'
import { PY_DIR, PYTHON, parseJsonOut, run } from './helpers/python-worker.js'

const APP = 'test/fixtures/tasks/dedup-tasks.js'
const BROKER = REDIS_URL.replace(/\/\d*$/, '/8')
const BACKEND = REDIS_URL.replace(/\/\d*$/, '/9')
const skip = await brokerSkipReason('redis')

describe('a Python send with the tsq_dedup header, deduplicated by a tsq worker', { skip, timeout: 180_000 }, () => {
  const queue = uniqueName('pydedup')
  let worker: SpawnedWorker
  let redis: Redis
  let app: App
  const lists: string[] = []

  before(async () => {
    redis = new Redis(BACKEND)
    app = createApp({ name: 'pydedup-test', broker: BROKER, resultBackend: BACKEND })
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
      { nodename: uniqueName('pydedup') + '@h', readyTimeoutMs: 120_000, env: { TSQ_TEST_REDIS_URL: BACKEND } },
    )
  })
  after(async () => {
    await worker?.stop('SIGKILL').catch(() => undefined)
    await app?.close().catch(() => undefined)
    if (redis) {
      if (lists.length) await redis.del(...lists).catch(() => undefined)
      redis.disconnect()
    }
  })

  const send = async (header: Record<string, unknown>, plan: Array<[string, number]>, runMs: number) => {
    const list = uniqueName('ran')
    lists.push(list)
    const res = await run(PYTHON, [`${PY_DIR}/dedup_send.py`, list, String(runMs), JSON.stringify(header), JSON.stringify(plan)], {
      cwd: PY_DIR,
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', TSQ_INTEROP_BROKER: BROKER, TSQ_INTEROP_QUEUE: queue },
      timeoutMs: 60_000,
    })
    return { list, ids: parseJsonOut(res, 'dedup_send.py') as Record<string, string> }
  }
  const ranOn = async (list: string, waitMs: number) => {
    await new Promise((r) => setTimeout(r, waitMs))
    return (await redis.lrange(list, 0, -1)).sort()
  }

  it('simple: duplicates received while the first runs are discarded as REVOKED; a send after it ended runs', async () => {
    const id = uniqueName('u')
    const { list, ids } = await send(
      { id, mode: 'simple' },
      [
        ['a', 0],
        ['b', 200],
        ['c', 400],
        ['d', 3500],
      ],
      1500,
    )
    assert.deepEqual(await ranOn(list, 2500), ['a', 'd'], worker.output().slice(-3000))
    assert.match(worker.output(), new RegExp(`dedup\\.run\\[${ids.b}\\] is a duplicate of ${ids.a}`))
    assert.equal(await app.asyncResult(ids.c!).state, 'REVOKED')
  })

  it('throttle: one run per ttl', async () => {
    const { list } = await send(
      { id: uniqueName('u'), mode: 'throttle', ttl: 1.5 },
      [
        ['a', 0],
        ['b', 500],
        ['c', 2200],
      ],
      50,
    )
    assert.deepEqual(await ranOn(list, 1500), ['a', 'c'])
  })

  it('debounce: each held for the ttl from its receipt; only the last one received within the window runs', async () => {
    const { list, ids } = await send(
      { id: uniqueName('u'), mode: 'debounce', ttl: 1.5 },
      [
        ['a', 0],
        ['b', 400],
        ['c', 800],
      ],
      50,
    )
    assert.deepEqual(await ranOn(list, 3000), ['c'], worker.output().slice(-3000))
    assert.match(worker.output(), new RegExp(`dedup\\.run\\[${ids.a}\\] was replaced by ${ids.b}`))
  })
})
