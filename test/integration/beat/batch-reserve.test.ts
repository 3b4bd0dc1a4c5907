// Beat reserves the runs due in one pass together, one Lua
// script per chunk that checks the lease's fencing token once. These tests
// hold the batch to what one reservation at a time guaranteed: a wrong token
// writes nothing, each run gets its own run-count check, a burst larger than
// one chunk is sent exactly once, a beat deposed between its lease check and
// its reservation sends nothing, and runs reserved but never sent (a failed
// send) are given back rather than lost. On the real Redis.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Redis } from 'ioredis'
import { REDIS_URL, requireBroker, uniqueName } from '../../helpers/brokers.js'
import { deleteCeleryQueues } from '../../interop/helpers/cleanup.js'
import { decodeMeta, encodeDefinition, encodeMeta, intervalJson } from '../../../src/beat/entry.js'
import { RedisLease } from '../../../src/beat/lease.js'
import { RedisStore, score } from '../../../src/beat/redis-store.js'
import { Beat, type BeatOptions } from '../../../src/beat/scheduler.js'
import { createTransport, type Transport } from '../../../src/transport/index.js'

const quiet = { debug() {}, info() {}, warning() {}, error() {} }
const HOUR = 3600_000

interface Fixture {
  redis: Redis
  store: RedisStore
  prefix: string
  queue: string
  /** When the seeded entries fall due. */
  dueAt: number
  close(): Promise<void>
}

async function fixture(count: number): Promise<Fixture> {
  const prefix = `${uniqueName('tsq-beat-batch')}:`
  const queue = uniqueName('tsq-beat-batch-q')
  const redis = new Redis(REDIS_URL)
  const dueAt = Date.now() + HOUR
  const pipe = redis.pipeline()
  for (let i = 0; i < count; i++) {
    const key = `${prefix}e${i}`
    pipe.hset(
      key,
      'definition',
      encodeDefinition({
        name: `e${i}`,
        task: 'proj.add',
        args: [i, 1],
        kwargs: {},
        options: { queue },
        schedule: intervalJson(3600),
        enabled: true,
      }),
    )
    pipe.hset(key, 'meta', encodeMeta({ lastRunAt: dueAt - HOUR, totalRunCount: 0 }))
    pipe.zadd(`${prefix}:schedule`, score(dueAt), key)
  }
  await pipe.exec()
  const store = await RedisStore.open({ url: REDIS_URL, keyPrefix: prefix })
  return {
    redis,
    store,
    prefix,
    queue,
    dueAt,
    async close() {
      await store.close()
      const keys = await redis.keys(`${prefix}*`)
      if (keys.length) await redis.del(...keys)
      await redis.del(queue)
      await redis.quit()
      await deleteCeleryQueues('redis', REDIS_URL, [queue])
    },
  }
}

async function counts(f: Fixture, n: number): Promise<number[]> {
  const pipe = f.redis.pipeline()
  for (let i = 0; i < n; i++) pipe.hget(`${f.prefix}e${i}`, 'meta')
  const out = (await pipe.exec()) ?? []
  return out.map(([, raw]) => decodeMeta(raw as string | null).totalRunCount)
}

function beatOn(f: Fixture, transport: Transport, lease: RedisLease, clock: () => number, extra: Partial<BeatOptions> = {}): Beat {
  return new Beat({ store: f.store, transport, tz: 'UTC', maxInterval: 300, ha: 'lease', lease, log: quiet, now: clock, ...extra })
}

test('[beat batch] reserveAll checks the fence once: a stale token writes nothing; a current one checks each run', async (t) => {
  if (!(await requireBroker(t, 'redis'))) return
  const f = await fixture(3)
  const lease = new RedisLease(f.store.redis, f.store.lockKey, 10_000)
  try {
    assert.equal(await lease.refresh(), 'acquired')
    // e1 already ran once (another beat took run 0); e2 was removed.
    await f.redis.hset(`${f.prefix}e1`, 'meta', encodeMeta({ lastRunAt: f.dueAt, totalRunCount: 1 }))
    await f.redis.del(`${f.prefix}e2`)
    const runs = [0, 1, 2].map((i) => ({ name: `e${i}`, expectedCount: 0, ranAt: f.dueAt, nextDueAt: f.dueAt + HOUR }))
    const before = await f.redis.zrange(`${f.prefix}:schedule`, 0, -1, 'WITHSCORES')

    assert.deepEqual(await f.store.reserveAll(runs, { key: lease.key, token: `${lease.held!.token}x` }), ['fenced', 'fenced', 'fenced'])
    assert.deepEqual(await counts(f, 2), [0, 1], 'a fenced batch wrote no meta')
    assert.deepEqual(await f.redis.zrange(`${f.prefix}:schedule`, 0, -1, 'WITHSCORES'), before, 'nor any score')

    assert.deepEqual(await f.store.reserveAll(runs, lease.held!), ['ok', 'stale', 'gone'])
    assert.deepEqual(await counts(f, 2), [1, 1])
    assert.equal(Number(await f.redis.zscore(`${f.prefix}:schedule`, `${f.prefix}e0`)), score(f.dueAt + HOUR))
    // Run 0 of e0 is taken: asking again (as a second beat would) is stale.
    assert.deepEqual(await f.store.reserveAll(runs.slice(0, 1), lease.held!), ['stale'])
    // The single-run call is the same script.
    assert.equal(await f.store.reserve({ ...runs[0]!, expectedCount: 1, fence: lease.held! }), 'ok')
  } finally {
    await lease.release()
    await f.close()
  }
})

test('[beat batch] release gives back a reservation only while nothing was recorded after it', async (t) => {
  if (!(await requireBroker(t, 'redis'))) return
  const f = await fixture(2)
  try {
    const previous = { lastRunAt: f.dueAt - HOUR, totalRunCount: 0 }
    const runs = [0, 1].map((i) => ({ name: `e${i}`, expectedCount: 0, ranAt: f.dueAt, nextDueAt: f.dueAt + HOUR }))
    assert.deepEqual(await f.store.reserveAll(runs), ['ok', 'ok'])
    // Run 1 of e1 was recorded since: its reservation of run 0 is no longer the last word.
    assert.equal(await f.store.reserve({ name: 'e1', expectedCount: 1, ranAt: f.dueAt + HOUR, nextDueAt: f.dueAt + 2 * HOUR }), 'ok')
    assert.equal(await f.store.release(runs.map((r) => ({ ...r, previous }))), 1)
    assert.deepEqual(await counts(f, 2), [0, 2])
    assert.deepEqual((await f.store.get('e0'))!.meta, previous)
    assert.equal(Number(await f.redis.zscore(`${f.prefix}:schedule`, `${f.prefix}e0`)), score(f.dueAt), 'e0 is due again')
    assert.equal(await f.store.release(runs.slice(0, 1).map((r) => ({ ...r, previous }))), 0, 'a second release finds nothing of its own')
  } finally {
    await f.close()
  }
})

test('[beat batch] a burst larger than one reservation chunk is sent exactly once, and a standby sends none of it', async (t) => {
  if (!(await requireBroker(t, 'redis'))) return
  const N = 1234
  const f = await fixture(N)
  const transport = await createTransport(REDIS_URL)
  await transport.connect()
  const leaseA = new RedisLease(f.store.redis, f.store.lockKey, 10_000)
  const leaseB = new RedisLease(f.store.redis, f.store.lockKey, 10_000)
  let clock = f.dueAt + 1000
  const sent: string[] = []
  const a = beatOn(f, transport, leaseA, () => clock, { onSent: (name, _id, n) => sent.push(`${name}#${n}`) })
  const b = beatOn(f, transport, leaseB, () => clock, { onSent: (name, _id, n) => sent.push(`B ${name}#${n}`) })
  try {
    for (let i = 0; i < 10 && a.sent < N; i++) {
      await a.tick()
      await b.tick()
    }
    assert.equal(b.sent, 0, 'the standby sent nothing')
    assert.equal(sent.length, N)
    assert.equal(new Set(sent).size, N, 'no run sent twice')
    assert.ok(sent.every((s) => s.endsWith('#0')))
    assert.equal(await f.redis.llen(f.queue), N, 'every reserved run reached the queue')
    assert.ok(
      (await counts(f, N)).every((n) => n === 1),
      'each entry recorded one run',
    )
    // Nothing is due any more: another pass sends nothing.
    clock += 1000
    await a.tick()
    assert.equal(a.sent, N)
  } finally {
    await leaseA.release()
    await leaseB.release()
    await transport.close()
    await f.close()
  }
})

test('[beat batch] a beat deposed between its lease check and its reservation sends nothing', async (t) => {
  if (!(await requireBroker(t, 'redis'))) return
  const N = 40
  const f = await fixture(N)
  const transport = await createTransport(REDIS_URL)
  await transport.connect()
  const leaseA = new RedisLease(f.store.redis, f.store.lockKey, 10_000)
  const leaseB = new RedisLease(f.store.redis, f.store.lockKey, 10_000)
  // The lease changes hands while beat A loads the due entries: A still believes it leads.
  const store = new Proxy(f.store, {
    get(target, prop, receiver) {
      if (prop !== 'due') return Reflect.get(target, prop, receiver)
      return async (now: number) => {
        const batch = await target.due(now)
        await f.redis.del(target.lockKey)
        assert.equal(await leaseB.refresh(), 'acquired')
        return batch
      }
    },
  })
  const warnings: string[] = []
  const a = beatOn(f, transport, leaseA, () => f.dueAt + 1000, { store, log: { ...quiet, warning: (m: string) => warnings.push(m) } })
  try {
    assert.equal(await a.tick(), 0)
    assert.equal(a.sent, 0)
    assert.equal(await f.redis.llen(f.queue), 0)
    assert.ok(
      (await counts(f, N)).every((n) => n === 0),
      'the deposed beat reserved nothing',
    )
    assert.equal(leaseA.held, null, 'it let the lease go')
    assert.ok(
      warnings.some((w) => w.includes('the lease moved to another beat')),
      warnings.join('\n'),
    )
  } finally {
    await leaseA.release()
    await leaseB.release()
    await transport.close()
    await f.close()
  }
})

test('[beat batch] when a send fails, the runs not yet started are given back and a later pass sends them once', async (t) => {
  if (!(await requireBroker(t, 'redis'))) return
  const N = 300
  const FAIL_AT = 100
  const f = await fixture(N)
  const real = await createTransport(REDIS_URL)
  await real.connect()
  let publishes = 0
  // The broker refuses one publish (as a dropped connection would fail one).
  const flaky = new Proxy(real, {
    get(target, prop, receiver) {
      if (prop !== 'publish') return Reflect.get(target, prop, receiver)
      return async (...args: Parameters<Transport['publish']>) => {
        publishes += 1
        if (publishes === FAIL_AT) throw new Error('broker said no')
        return target.publish(...args)
      }
    },
  })
  const lease = new RedisLease(f.store.redis, f.store.lockKey, 10_000)
  const sent: string[] = []
  const onSent = (name: string) => sent.push(name)
  const clock = () => f.dueAt + 1000
  try {
    const a = beatOn(f, flaky, lease, clock, { onSent })
    await assert.rejects(a.tick(), /broker said no/)
    const afterFailure = sent.length
    assert.ok(afterFailure >= FAIL_AT - 1 && afterFailure < N - 1, `sent ${afterFailure} before stopping`)
    const given = (await counts(f, N)).filter((n) => n === 0).length
    assert.equal(given, N - afterFailure - 1, 'every run not started was given back; only the failed one is spent')
    // The next pass (same beat, broker fine again) sends the rest.
    await a.tick()
    assert.equal(sent.length, N - 1)
    assert.equal(new Set(sent).size, N - 1, 'no run sent twice')
    assert.equal(await f.redis.llen(f.queue), N - 1)
    assert.ok((await counts(f, N)).every((n) => n === 1))
  } finally {
    await lease.release()
    await real.close()
    await f.close()
  }
})
