// Task locks on a broker and the lock store it chooses (Redis:
// test/e2e/locks-redis.test.ts; RabbitMQ: locks-amqp.test.ts): mutual
// exclusion under load (two prefork -c 4 workers, 1,000 tasks over 10 keys,
// 0 overlaps, all finish), the no-leak cases (a)-(f), a deposed holder refused
// by a fenced write, and bad input (a key function that throws, a lock store
// that is down). Four workers in all, started together, so a file stays lean.
//
// Latencies are printed as diagnostics, never asserted: cases (a)-(d) hold a
// 600 s lease, so a next run that starts at all was let in by a release.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { sendTask } from '../../src/client/send-task.js'
import { lockIdFor } from '../../src/locks/index.js'
import { createTransport, type Transport } from '../../src/transport/index.js'
import { uniqueName, waitFor } from './brokers.js'
import { runTsq, startWorker, type SpawnedWorker } from './cli.js'

const APP = 'test/fixtures/tasks/locks-tasks.js'
/** The lease of locks.record/hold/fenced: (e), (f) and the deposed holder wait it out. */
const LEASE_S = 3

export interface LockSuite {
  /** 'redis' | 'amqp': the broker, and the lock store it chooses. */
  kind: 'redis' | 'amqp'
  broker: string
  /** Where the tasks record their runs and the results go (a Redis URL); on RabbitMQ it also counts the fencing tokens. */
  redisUrl: string
  skip: string | false
  /** A lock store URL that is down, for the bad-input case. */
  downUrl: string
}

interface Event {
  key: string
  id: string
  event?: string
  at?: number
  start?: number
  end?: number
  token: number
  pid: number
}

export function lockSuite({ kind, broker: URL, redisUrl, skip, downUrl: DOWN_URL }: LockSuite): void {
  const queue = uniqueName('locks-q')
  /** Consumed by the two main workers and the spare (e) falls over to. */
  const spareQueue = uniqueName('locks-e')
  const downQueue = uniqueName('locks-down')
  const log = uniqueName('locks-log')
  // The keys are this run's own: the other locks file may run in another lane
  // at the same time on the same Redis database (8), and a lock id shared
  // between the two let one file's cleanup delete the other's live lock (case
  // (f) then saw its long run lose its lock and end early, with no 'end').
  const keyPrefix = `${uniqueName('lk')}-`
  /** The ids of the locks this run's tasks took, for the cleanup. */
  const lockIds = new Set<string>()
  let redis: Redis
  let transport: Transport
  let w1: SpawnedWorker
  let w2: SpawnedWorker
  let down: SpawnedWorker
  const started: SpawnedWorker[] = []

  /** The runs recorded, each `key` as the test gave it (without the run's prefix). */
  async function events(): Promise<Event[]> {
    return (await redis.lrange(log, 0, -1)).map((l) => {
      const e = JSON.parse(l) as Event
      return typeof e.key === 'string' && e.key.startsWith(keyPrefix) ? { ...e, key: e.key.slice(keyPrefix.length) } : e
    })
  }

  function worker(queues: string, pool: string[], env: NodeJS.ProcessEnv = {}): Promise<SpawnedWorker> {
    return startWorker(
      ['-A', APP, '-b', URL, '--result-backend', redisUrl, '-Q', queues, ...pool, '-l', 'INFO', '--without-mingle', '--without-gossip'],
      {
        nodename: uniqueName('locks') + '@h',
        readyTimeoutMs: 180_000,
        env: { TSQ_LOCK_LOG: log, TSQ_LOCK_LEASE: String(LEASE_S), TSQ_TEST_REDIS_URL: redisUrl, ...env },
      },
    ).then((w) => {
      started.push(w)
      return w
    })
  }

  /** The fixture's lock keys (test/fixtures/tasks/locks-tasks.js): a key function of the first argument, or the names ['key']. */
  const KEYED: Record<string, { key: ((key: string) => string) | string[] }> = {
    'locks.record': { key: (key) => key },
    'locks.fenced': { key: (key) => key },
    'locks.hold': { key: ['key'] },
    'locks.pinned': { key: ['key'] },
  }

  /** Sends `task`; a keyed task's key (its first argument) gets the run's prefix. */
  const send = (task: string, args: unknown[], extra: { timeLimit?: number; id?: string; queue?: string } = {}) => {
    const keyed = KEYED[task]
    if (keyed) {
      args = [keyPrefix + String(args[0]), ...args.slice(1)]
      lockIds.add(lockIdFor(task, keyed, args, {}, ['key', 'ms']))
    }
    return sendTask(transport, task, { args, queue, ...extra })
  }

  async function startsOf(key: string, n = 1): Promise<Event[]> {
    return waitFor(
      async () => {
        const starts = (await events()).filter((e) => e.key === key && e.event === 'start')
        return starts.length >= n ? starts : null
      },
      { timeoutMs: 40_000, intervalMs: 25, what: `${n} start(s) of ${key}` },
    )
  }

  /** The worker whose pool process `pid` is. */
  function workerOf(pid: number): SpawnedWorker {
    const ppid = Number(
      readFileSync(`/proc/${pid}/stat`, 'utf8')
        .replace(/^.*\) /s, '')
        .split(' ')[1],
    )
    const w = started.find((s) => s.child.pid === ppid)
    assert.ok(w, `pool process ${pid} belongs to none of the test's workers (parent ${ppid})`)
    return w
  }

  const allOutput = () => started.map((w) => w.output()).join('\n')

  describe(`task locks on ${kind}`, { skip, timeout: 600_000 }, () => {
    before(async () => {
      redis = new Redis(redisUrl)
      transport = await createTransport(URL)
      await transport.connect()
      const prefork4 = ['-P', 'prefork', '-c', '4']
      const ready = await Promise.allSettled([
        worker(`${queue},${spareQueue}`, prefork4),
        worker(`${queue},${spareQueue}`, prefork4),
        worker(spareQueue, ['-P', 'prefork', '-c', '1']),
        worker(downQueue, ['-P', 'solo'], { TSQ_TEST_LOCK_URL: DOWN_URL }),
      ])
      const failed = ready.find((r) => r.status === 'rejected')
      if (failed) throw failed.reason
      ;[w1, w2, , down] = ready.map((r) => (r as PromiseFulfilledResult<SpawnedWorker>).value) as [
        SpawnedWorker,
        SpawnedWorker,
        SpawnedWorker,
        SpawnedWorker,
      ]
    })
    after(async () => {
      await Promise.all(started.map((w) => w.stop('SIGKILL').catch(() => undefined)))
      await transport?.close({ requeueUnacked: false }).catch(() => undefined)
      if (redis) {
        // Only what this run made: a lock a run cut short left (up to 600 s), the fencing counters, the holder sets.
        const ids = [...lockIds]
        const holderSets = (await Promise.all(started.map((w) => redis.keys(`tsq:lock-holder:${w.nodename}:*`)))).flat()
        const scratch = [
          ...(await redis.keys(`*${log}*`)),
          ...ids.map((id) => `tsq:lock:${id}`),
          ...ids.map((id) => `tsq:lock-token:${id}`),
          ...holderSets,
        ]
        await redis.del(log, `${log}:resource`, queue, spareQueue, downQueue, ...scratch).catch(() => undefined)
        redis.disconnect()
      }
    })

    it('mutual exclusion under load: two prefork -c 4 workers, 1,000 tasks over 10 keys, 0 overlapping runs of a key, all finish', async (t) => {
      const ids: string[] = []
      for (let i = 0; i < 1000; i++) ids.push(await send('locks.record', [`key-${i % 10}`, 5]))
      const done = await waitFor(async () => ((await redis.llen(log)) >= 1000 ? await events() : null), {
        timeoutMs: 300_000,
        intervalMs: 500,
        what: '1,000 runs',
      })
      const byKey = new Map<string, Event[]>()
      for (const e of done) byKey.set(e.key, [...(byKey.get(e.key) ?? []), e])
      let overlaps = 0
      for (const runs of byKey.values()) {
        runs.sort((a, b) => a.start! - b.start!)
        for (let i = 1; i < runs.length; i++) {
          if (runs[i]!.start! < runs[i - 1]!.end!) overlaps++
          // The fencing token grows with every acquisition of the key.
          assert.ok(runs[i]!.token > runs[i - 1]!.token, `tokens of ${runs[i]!.key} in start order`)
        }
      }
      assert.equal(overlaps, 0)
      assert.equal(byKey.size, 10)
      assert.deepEqual(new Set(done.map((e) => e.id)), new Set(ids), 'every task finished')
      assert.equal(done.length, 1000, 'no task ran twice')
      const pids = new Set(done.map((e) => e.pid))
      assert.ok([...pids].some((p) => workerOf(p) === w1) && [...pids].some((p) => workerOf(p) === w2), 'both workers ran tasks')
      const retries = (allOutput().match(/locks\.record\[[^\]]+\] retry: /g) ?? []).length
      t.diagnostic(`${retries} runs found their key locked and were retried`)
      await redis.del(log)
    })

    it('(a) hard time limit: the next run of the key starts once the pool process is killed, not when the lease runs out', async (t) => {
      await send('locks.pinned', ['a', 60_000], { timeLimit: 2 })
      const [first] = await startsOf('a')
      await send('locks.pinned', ['a', 10])
      const [, second] = await startsOf('a', 2)
      t.diagnostic(`(a) next start ${second!.at! - first!.at! - 2000} ms after the 2 s hard limit`)
      assert.ok(second!.token > first!.token)
    })

    it('(b) revoke --terminate: the next run of the key starts once the pool process is killed', async (t) => {
      const id = uniqueName('locks-b')
      await send('locks.pinned', ['b', 60_000], { id })
      const [first] = await startsOf('b')
      await send('locks.pinned', ['b', 10])
      const node = workerOf(first!.pid).nodename
      // inspect active shows the lock the run holds, with its token.
      const active = await runTsq(['inspect', 'active', '-b', URL, '-d', node, '--json'], { timeoutMs: 60_000 })
      assert.equal(active.code, 0, active.stderr)
      const entry = (
        JSON.parse(active.stdout) as Record<string, Array<{ id: string; lock?: { id: string; token: number; lease_left: number } }>>
      )[node]!.find((e) => e.id === id)
      assert.ok(entry?.lock, active.stdout)
      assert.match(entry.lock.id, /^locks\.pinned-lock-[0-9a-f]{32}$/)
      assert.equal(entry.lock.token, first!.token)
      assert.ok(entry.lock.lease_left > 0)
      const revokedAt = Date.now()
      const r = await runTsq(['control', 'revoke', id, '--terminate', '-b', URL, '-d', node], { timeoutMs: 60_000 })
      const repliedAt = Date.now()
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, /terminate: /)
      const [, next] = await startsOf('b', 2)
      t.diagnostic(
        `(b) next start ${next!.at! - revokedAt} ms after \`tsq control revoke\` was spawned, ${next!.at! - repliedAt} ms after its reply`,
      )
      assert.notEqual(next!.id, id)
    })

    it('(c) kill -9 of the pool process: its worker frees the lock at once', async (t) => {
      await send('locks.pinned', ['c', 60_000])
      const [first] = await startsOf('c')
      const owner = workerOf(first!.pid)
      await send('locks.pinned', ['c', 10])
      const killedAt = Date.now()
      process.kill(first!.pid, 'SIGKILL')
      const [, next] = await startsOf('c', 2)
      t.diagnostic(`(c) next start ${next!.at! - killedAt} ms after kill -9`)
      // Logged once the store answered, which may be just after the next run began.
      // On RabbitMQ the broker freed it when the process's connection closed: nothing for the worker to do.
      if (kind === 'amqp') return
      const freed = new RegExp(`Freed 1 lock\\(s\\) held by lost pool process ${first!.pid}`)
      await waitFor(() => freed.test(owner.output()) || null, { timeoutMs: 20_000, what: "the worker frees the lost process's lock" })
    })

    it('(f) a task that runs three times its lease keeps its lock throughout: no second run meanwhile', async () => {
      await send('locks.hold', ['f', LEASE_S * 3000])
      const [first] = await startsOf('f')
      await send('locks.hold', ['f', 10])
      const [, second] = await startsOf('f', 2)
      const end = (await events()).find((e) => e.key === 'f' && e.event === 'end' && e.id === first!.id)
      assert.ok(end, 'the long run ended before the next started')
      assert.ok(second!.at! >= end.at!, 'the next run started after the long one ended')
      // Both stamps are Date.now() (wall clock) around a setTimeout (monotonic clock): a few ms of
      // slew between the two clocks made a run of exactly 3 leases read as just under it.
      const held = end.at! - first!.at!
      assert.ok(held >= LEASE_S * 3000 - 50, `the long run outlived its lease three times (held ${held} ms)`)
    })

    // On RabbitMQ the paused holder's lock connection has a heartbeat of half the lease: the broker gives it up, and its exclusive queue with it.
    it('a deposed holder (SIGSTOPped past its lease) has its token refused by a fenced write', async (t) => {
      // The first run waits 6 s before its write: the SIGSTOP below must land before it, and
      // 1.5 s was too little for a test process starved by the other lanes of a CI run.
      const firstWriteMs = 6000
      await send('locks.fenced', ['g', firstWriteMs])
      const [first] = await startsOf('g')
      const stoppedAt = Date.now()
      process.kill(first!.pid, 'SIGSTOP')
      const gRuns = async () => JSON.stringify((await events()).filter((e) => e.key === 'g'))
      try {
        // Past the lease: no renewal came, so the next run takes the lock with a higher token.
        await send('locks.fenced', ['g', 10])
        const accepted = await waitFor(async () => (await events()).find((e) => e.key === 'g' && e.event === 'write-accepted') ?? null, {
          timeoutMs: 40_000,
          what: 'the new holder writes',
        })
        assert.ok(
          stoppedAt - first!.at! < firstWriteMs,
          `the first run was stopped ${stoppedAt - first!.at!} ms after its start, after its write was due`,
        )
        const runs = await gRuns()
        assert.notEqual(accepted.id, first!.id, runs)
        assert.ok(accepted.token > first!.token, runs)
        t.diagnostic(`the new holder wrote ${accepted.at! - stoppedAt} ms after the first was stopped`)
      } finally {
        process.kill(first!.pid, 'SIGCONT')
      }
      const refused = await waitFor(async () => (await events()).find((e) => e.key === 'g' && e.event === 'write-refused') ?? null, {
        timeoutMs: 40_000,
        what: 'the deposed write',
      })
      assert.equal(refused.id, first!.id, await gRuns())
      const owner = workerOf(first!.pid)
      assert.match(
        owner.output(),
        new RegExp(`Lock locks\\.fenced-lock-[0-9a-f]+ \\(token ${first!.token}\\) was lost`),
        owner.output().slice(-3000),
      )
    })

    it('bad input: a key function that throws fails the task with its error, the worker goes on', async () => {
      const id = await send('locks.badkey', [])
      await waitFor(() => (allOutput().includes(`locks.badkey[${id}] raised unexpected: TypeError`) ? true : null), {
        timeoutMs: 40_000,
        what: 'badkey fails',
      })
      assert.match(allOutput(), /TypeError\('no key for you'\)/)
      assert.equal(w1.child.exitCode, null)
      assert.equal(w2.child.exitCode, null)
    })

    it('bad input: a lock store that is down fails the run with a clear error and requeues it, never runs it unlocked', async () => {
      const id = await send('locks.skip', [10], { queue: downQueue })
      const downLine = new RegExp(
        `locks\\.skip\\[${id}\\] not run: lock store ${DOWN_URL.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} unavailable`,
        'g',
      )
      await waitFor(() => (down.output().match(downLine)?.length ?? 0) >= 2 || null, {
        timeoutMs: 60_000,
        what: 'the store-down line, twice (requeued and taken again)',
      })
      assert.match(down.output(), new RegExp(`locks\\.skip\\[${id}\\] reject requeue=True`))
      await down.stop('SIGTERM')
      // Back on its queue after the worker's warm stop, still never run.
      const waiting = async () =>
        kind === 'redis'
          ? redis.llen(downQueue)
          : (await transport.declareQueue({ name: downQueue, durable: true, exclusive: false, autoDelete: false })).messageCount
      await waitFor(async () => ((await waiting()) === 1 ? true : null), { timeoutMs: 30_000, what: 'the message back on its queue' })
      assert.equal((await events()).filter((e) => e.event === 'skip-ran').length, 0, 'never ran unlocked')
    })

    it('(d) cold shutdown frees the lock at once; (e) kill -9 of the whole worker: the next starts once the lease runs out', async (t) => {
      await send('locks.pinned', ['d', 60_000])
      const [dFirst] = await startsOf('d')
      const cold = workerOf(dFirst!.pid)
      await send('locks.pinned', ['d', 10])
      const coldAt = Date.now()
      await cold.stop('SIGQUIT')
      const [, dNext] = await startsOf('d', 2)
      t.diagnostic(`(d) next start ${dNext!.at! - coldAt} ms after the cold shutdown began`)
      // (e): whichever of the survivor and the spare runs it is killed with its pool processes.
      await send('locks.hold', ['e', 60_000], { queue: spareQueue })
      const [eFirst] = await startsOf('e')
      const victim = workerOf(eFirst!.pid)
      const killedAt = Date.now()
      // The worker first, so it cannot free its pool process's lock (that is case (c)).
      victim.child.kill('SIGKILL')
      process.kill(eFirst!.pid, 'SIGKILL')
      await victim.stop('SIGKILL')
      // Sent after the kill: one the dead worker had reserved would wait for Redis's visibility timeout (kombu's rule).
      await send('locks.hold', ['e', 10], { queue: spareQueue })
      const [, eNext] = await startsOf('e', 2)
      t.diagnostic(`(e) next start ${eNext!.at! - killedAt} ms after kill -9 (lease ${LEASE_S * 1000} ms)`)
      assert.ok(eNext!.token > eFirst!.token)
    })
  })
}
