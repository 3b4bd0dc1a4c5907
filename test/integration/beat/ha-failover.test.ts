// Three beats on one Redis store, a 1-second entry, the
// sends counted by a consumer. --ha lease: the leader is kill -9'ed twice; no
// run is sent twice and every gap in the sends falls in a failover window of
// at most the lease time. --ha mutex: all three active, one killed; no
// duplicates and no missing runs.
//
// Observation time: TSQ_BEAT_FAILOVER_SECONDS, default 60 by hand and 25 in CI
// (CI set), to keep the suite's share small.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Redis } from 'ioredis'
import { AMQP_URL, REDIS_URL, requireBroker, uniqueName, waitFor } from '../../helpers/brokers.js'
import { RedisStore } from '../../../src/beat/redis-store.js'
import { intervalJson } from '../../../src/beat/entry.js'
import { sleep, startBeat, stopAll, watchQueue, type BeatProc } from './beat-procs.js'
import { deleteCeleryQueues } from '../../interop/helpers/cleanup.js'

const SECONDS = Number(process.env.TSQ_BEAT_FAILOVER_SECONDS ?? (process.env.CI ? 25 : 60))
const LOCK_TIMEOUT = 3

async function cleanup(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL)
  const keys = await redis.keys(`${prefix}*`)
  if (keys.length) await redis.del(...keys)
  await redis.quit()
}

async function seed(prefix: string, queue: string): Promise<void> {
  const store = await RedisStore.open({ url: REDIS_URL, keyPrefix: prefix })
  await store.save(
    { name: 'tick', task: 'proj.add', args: [1, 2], kwargs: {}, options: { queue }, schedule: intervalJson(1), enabled: true },
    { meta: { lastRunAt: Date.now(), totalRunCount: 0 } },
  )
  await store.close()
}

function allRuns(procs: BeatProc[]): number[] {
  return procs.flatMap((p) => p.runs.map((r) => r.n)).sort((a, b) => a - b)
}

function assertNoDuplicates(runs: number[]): void {
  const dup = runs.filter((n, i) => i > 0 && runs[i - 1] === n)
  assert.deepEqual(dup, [], `runs sent twice: ${dup.join(', ')}`)
}

const leader = (procs: BeatProc[]) =>
  procs.find(
    (p) =>
      p.child.exitCode === null &&
      p.child.signalCode === null &&
      p.output.some((l) => l.includes('took the lease')) &&
      !p.output.slice(p.output.findLastIndex((l) => l.includes('took the lease'))).some((l) => l.includes('lost the lease')),
  )

test(
  `[--ha lease] three beats, leader killed twice: no duplicates, gaps only in failover windows (${SECONDS}s)`,
  { timeout: (SECONDS + 60) * 1000 },
  async (t) => {
    if (!(await requireBroker(t, 'redis'))) return
    const prefix = `${uniqueName('tsq-beat')}:`
    const queue = uniqueName('tsq-beat-q')
    const procs: BeatProc[] = []
    const { received, transport } = await watchQueue(REDIS_URL, queue)
    try {
      await seed(prefix, queue)
      const args = [
        '-b',
        REDIS_URL,
        '--scheduler',
        'redis',
        '--key-prefix',
        prefix,
        '--ha',
        'lease',
        '--lock-timeout',
        String(LOCK_TIMEOUT),
        '--max-interval',
        '1',
      ]
      for (let i = 0; i < 3; i++) startBeat(args, procs)
      const kills: number[] = []
      const started = Date.now()
      await waitFor(() => received.length > 2, { timeoutMs: 20_000, what: 'first sends' })
      for (const at of [SECONDS / 3, (2 * SECONDS) / 3]) {
        await sleep(Math.max(0, started + at * 1000 - Date.now()))
        const victim = await waitFor(() => leader(procs), { timeoutMs: 15_000, what: 'a leader' })
        kills.push(Date.now())
        victim.child.kill('SIGKILL')
      }
      await sleep(Math.max(0, started + SECONDS * 1000 - Date.now()))
      await stopAll(procs)
      await sleep(300)
      const runs = allRuns(procs)
      assertNoDuplicates(runs)
      assert.equal(received.length, runs.length, 'every send the beats logged reached the queue, and nothing else')
      assert.ok(received.length >= SECONDS / 2, `too few sends: ${received.length}`)
      // A gap longer than 2 s must follow a kill and last no more than the lease time plus one interval and slack.
      for (let i = 1; i < received.length; i++) {
        const gap = received[i]!.at - received[i - 1]!.at
        if (gap <= 2000) continue
        const kill = kills.find((k) => k >= received[i - 1]!.at - 1500 && k <= received[i]!.at)
        assert.ok(kill !== undefined, `a ${gap} ms gap outside a failover window`)
        assert.ok(gap <= (LOCK_TIMEOUT + 2.5) * 1000, `failover gap ${gap} ms exceeds the lease time`)
      }
    } finally {
      await stopAll(procs)
      await transport.deleteQueue(queue).catch(() => undefined)
      await transport.close()
      await cleanup(prefix)
      // The beats declared the queue's exchange and binding too (as Celery does).
      await deleteCeleryQueues('redis', REDIS_URL, [queue])
    }
  },
)

test(
  `[--ha mutex] three active beats, one killed: no duplicates, no missing runs (${SECONDS}s)`,
  { timeout: (SECONDS + 60) * 1000 },
  async (t) => {
    if (!(await requireBroker(t, 'redis')) || !(await requireBroker(t, 'amqp'))) return
    const prefix = `${uniqueName('tsq-beat')}:`
    const queue = uniqueName('tsq-beat-q')
    const procs: BeatProc[] = []
    const { received, transport } = await watchQueue(AMQP_URL, queue)
    try {
      await seed(prefix, queue)
      const args = [
        '-b',
        AMQP_URL,
        '--scheduler',
        'redis',
        '--redis-url',
        REDIS_URL,
        '--key-prefix',
        prefix,
        '--ha',
        'mutex',
        '--max-interval',
        '1',
      ]
      for (let i = 0; i < 3; i++) startBeat(args, procs)
      const started = Date.now()
      await waitFor(() => received.length > 2, { timeoutMs: 20_000, what: 'first sends' })
      await sleep(Math.max(0, started + (SECONDS / 2) * 1000 - Date.now()))
      procs[0]!.child.kill('SIGKILL')
      await sleep(Math.max(0, started + SECONDS * 1000 - Date.now()))
      await stopAll(procs)
      await sleep(300)
      const runs = allRuns(procs)
      assertNoDuplicates(runs)
      assert.equal(received.length, runs.length, 'every send the beats logged reached the queue, and nothing else')
      const first = runs[0]!
      assert.deepEqual(
        runs,
        runs.map((_, i) => first + i),
        'run numbers are consecutive: none missing',
      )
      const senders = procs.filter((p) => p.runs.length > 0).length
      assert.ok(senders >= 2, 'more than one beat sent (all are active)')
    } finally {
      await stopAll(procs)
      await transport.deleteQueue(queue).catch(() => undefined)
      await transport.close()
      await cleanup(prefix)
      // The beats declared the queue's exchange and binding too (as Celery does).
      await deleteCeleryQueues('amqp', AMQP_URL, [queue])
    }
  },
)
