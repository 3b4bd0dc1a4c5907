// `tsq worker -B`: beat runs inside the worker process, as Celery's embedded
// beat does. The app's one-second entry is sent and run by the same process;
// every way the worker stops (TERM, a remote `shutdown`) stops beat with it,
// so the process exits. With the Redis store, several workers with -B elect
// one sender by lease, where Celery's -B on two workers sends everything twice.
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { REDIS_URL, requireBroker, uniqueName, waitFor } from '../helpers/brokers.js'
import { embeddedBrokerEnv, runTsq, startWorker, tempTsqHome, type SpawnedWorker } from '../helpers/cli.js'
import { deleteCeleryQueues } from '../interop/helpers/cleanup.js'

const APP = 'test/fixtures/tasks/embedded-beat-tasks.js'
const SENT = 'Scheduler: Sending due task tick (embedded.tick)'
let n = 0
const running: SpawnedWorker[] = []
after(async () => {
  for (const w of running.splice(0)) await w.stop('SIGKILL')
})

function nodeName(): string {
  return `beatw${++n}-${process.pid}@testhost`
}

function ticks(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []
}

function fileSetup(): { env: NodeJS.ProcessEnv; tickFile: string; schedule: string } {
  const home = tempTsqHome()
  const tickFile = join(home, 'ticks')
  const env = embeddedBrokerEnv(home, { TSQ_TEST_TICK_FILE: tickFile, TSQ_TEST_QUEUE: 'ticks' })
  return { env, tickFile, schedule: join(home, 'beat-schedule.json') }
}

async function start(args: string[], env: NodeJS.ProcessEnv, nodename = nodeName()): Promise<SpawnedWorker> {
  const worker = await startWorker(
    ['-A', APP, '-P', 'solo', '-c', '2', '-Q', env.TSQ_TEST_QUEUE!, '-l', 'INFO', '--without-mingle', '--without-gossip', ...args],
    { env, nodename },
  )
  running.push(worker)
  return worker
}

describe('[worker -B] the embedded beat', () => {
  it("sends the app's entries, which this worker runs, and stops with a warm shutdown (TERM)", { timeout: 60_000 }, async () => {
    const { env, tickFile, schedule } = fileSetup()
    const worker = await start(['-B', '-s', schedule], env)
    await waitFor(() => ticks(tickFile).length >= 2, { timeoutMs: 15_000, what: 'two ticks run' })
    assert.ok(
      ticks(tickFile).every((line) => line.startsWith(`${worker.nodename} `)),
      'the worker that sent them ran them',
    )
    assert.match(worker.output(), /beat: Starting\.\.\./)
    assert.equal(await worker.stop('SIGTERM'), 0, worker.output())
    // The file store kept the entry and its run count, as `tsq beat` would.
    const stored = JSON.parse(readFileSync(schedule, 'utf8')) as { entries: Record<string, { meta: { total_run_count: number } }> }
    assert.ok(stored.entries.tick!.meta.total_run_count >= 2, JSON.stringify(stored.entries.tick))
  })

  it('stops when the worker is told to shut down remotely, so the process exits', { timeout: 60_000 }, async () => {
    const { env, tickFile, schedule } = fileSetup()
    const worker = await start(['-B', '-s', schedule], env)
    await waitFor(() => ticks(tickFile).length >= 1, { timeoutMs: 15_000, what: 'a tick run' })
    // As Celery's, the shutdown command gets no reply: what counts is that the process ends.
    await runTsq(['control', 'shutdown', '-d', worker.nodename, '-t', '1'], { env })
    const code = await new Promise((resolve) => {
      if (worker.child.exitCode !== null) return resolve(worker.child.exitCode)
      worker.child.once('exit', resolve)
      setTimeout(() => resolve('still running'), 15_000).unref()
    })
    assert.equal(code, 0, worker.output())
  })

  it('without -B sends nothing', { timeout: 60_000 }, async () => {
    const { env, tickFile } = fileSetup()
    const worker = await start([], env)
    await new Promise((r) => setTimeout(r, 2500))
    assert.deepEqual(ticks(tickFile), [])
    assert.doesNotMatch(worker.output(), /beat: Starting/)
    assert.equal(await worker.stop('SIGTERM'), 0)
  })

  it(
    'with --scheduler redis, two workers with -B send each tick once: one holds the lease, and the other takes over when it stops',
    { timeout: 90_000 },
    async (t) => {
      if (!(await requireBroker(t, 'redis'))) return
      const { env: fileEnv, tickFile } = fileSetup()
      const queue = uniqueName('tsq-embedded-beat')
      const prefix = `${uniqueName('tsq-embedded-redbeat')}:`
      const env = { ...fileEnv, TSQ_TEST_QUEUE: queue }
      const args = ['-B', '--scheduler', 'redis', '--key-prefix', prefix, '-b', REDIS_URL]
      try {
        const first = await start(args, env)
        const second = await start(args, env)
        const leaderOf = () => [first, second].find((w) => w.output().includes('this beat now sends'))
        const leader = await waitFor(leaderOf, { timeoutMs: 15_000, what: 'one worker to take the lease' })
        const follower = leader === first ? second : first
        await waitFor(() => ticks(tickFile).length >= 3, { timeoutMs: 15_000, what: 'three ticks run' })
        assert.ok(leader.output().includes(SENT))
        assert.ok(!follower.output().includes(SENT), `the follower sent too:\n${follower.output()}`)
        assert.ok(!follower.output().includes('this beat now sends'))

        // The leader's beat releases the lease as its worker stops, so the follower
        // (polling every second) takes over at once, not after the 10 s a lease
        // left to expire would take.
        assert.equal(await leader.stop('SIGTERM'), 0, leader.output())
        await waitFor(() => follower.output().includes(SENT), { timeoutMs: 6_000, what: 'the follower to take over the released lease' })
        const before = ticks(tickFile).length
        await waitFor(() => ticks(tickFile).length >= before + 2, { timeoutMs: 15_000, what: 'ticks after the take-over' })
        assert.equal(await follower.stop('SIGTERM'), 0, follower.output())
      } finally {
        await deleteCeleryQueues('redis', REDIS_URL, [queue])
        const redis = new Redis(REDIS_URL)
        const keys = await redis.keys(`${prefix}*`)
        if (keys.length) await redis.del(...keys)
        await redis.quit()
      }
    },
  )
})
