// A cluster-wide rate limit (rateLimitScope 'cluster') held across two tsq
// workers, on Redis (bucket in the broker's Redis) and on RabbitMQ (bucket in
// the Redis result backend): the runs per 1 s window stay at the one rate, not
// twice it; `tsq control rate_limit` reaches both workers and the new rate is in
// force within a second or two; a kill -9 of one worker holding slots and
// messages loses none and runs none twice, and the other then gets the whole
// rate. Bounds are generous: a loaded machine runs late, never over the rate.
// tsq-test: slow 3
import assert from 'node:assert/strict'
import { resolve } from 'node:path'
import { after, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { sendTask } from '../../src/client/send-task.js'
import { createTransport } from '../../src/transport/index.js'
import { AMQP_URL, REDIS_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { runTsq } from '../helpers/cli.js'
import { sleep } from '../helpers/process-group.js'
import { deleteCeleryQueues } from '../interop/helpers/cleanup.js'
import { REPO_ROOT } from '../interop/helpers/python-worker.js'
import { startTsqWorker, type TsqWorker } from '../interop/worker-helpers/tsq-worker.js'

const MODULE = resolve(REPO_ROOT, 'test/fixtures/tasks/rate-tasks.js')
const REDIS_DB = REDIS_URL.replace(/\/\d*$/, '/10')

interface Run {
  n: number
  at: number
  pid: number
}

/** Runs per whole second from the first run, the partial last second left out. */
function perSecond(runs: Run[]): number[] {
  if (runs.length === 0) return []
  const t0 = Math.min(...runs.map((r) => r.at))
  const last = Math.max(...runs.map((r) => r.at))
  const counts = new Array<number>(Math.floor((last - t0) / 1000)).fill(0)
  for (const r of runs) {
    const i = Math.floor((r.at - t0) / 1000)
    if (i < counts.length) counts[i] = counts[i]! + 1
  }
  return counts
}

for (const kind of ['redis', 'amqp'] as const) {
  const skip = (await brokerSkipReason('redis')) || (kind === 'amqp' && (await brokerSkipReason('amqp')))
  const broker = kind === 'redis' ? REDIS_DB : AMQP_URL

  describe(`cluster rate limit, two workers on ${kind}`, { skip }, () => {
    const queue = uniqueName('tsq-rate')
    const log = uniqueName('tsq-rate-log')
    const workers: TsqWorker[] = []
    const redis = skip ? (undefined as unknown as Redis) : new Redis(REDIS_DB)

    after(async () => {
      await Promise.all(workers.map((w) => w.stop()))
      await deleteCeleryQueues(kind, broker, [queue]).catch(() => undefined)
      await redis.del(log, 'tsq:rate:rate.tick', 'tsq:rate-tat:rate.tick', 'tsq:rate-deferred:rate.tick')
      redis.disconnect()
    })

    const start = (pool: 'solo' | 'prefork') =>
      startTsqWorker({
        env: { broker, backend: REDIS_DB, queue },
        module: MODULE,
        pool,
        concurrency: pool === 'solo' ? 1 : 2,
      })

    async function send(count: number, from = 0): Promise<void> {
      const transport = await createTransport(broker)
      await transport.connect()
      try {
        for (let i = from; i < from + count; i += 1)
          await sendTask(transport, 'rate.tick', { args: [i], queue, exchange: queue, routingKey: queue })
      } finally {
        await transport.close()
      }
    }

    const runs = async (): Promise<Run[]> => (await redis.lrange(log, 0, -1)).map((line) => JSON.parse(line) as Run)
    const logs = () => workers.map((w, i) => `--- worker ${i + 1} ---\n${w.logTail(3000)}`).join('\n')

    it(
      'holds 20/s across both workers, takes a new rate from tsq control, loses and doubles nothing over a kill -9',
      { timeout: 150_000 },
      async () => {
        process.env.TSQ_RATE = '20/s'
        process.env.TSQ_RATE_LOG = log
        process.env.TSQ_TEST_REDIS_URL = REDIS_DB
        process.env.TSQ_RATE_VISIBILITY = '8'
        await redis.del(log, 'tsq:rate:rate.tick', 'tsq:rate-tat:rate.tick', 'tsq:rate-deferred:rate.tick')
        workers.push(await start('solo'), await start('prefork'))

        // 1. The one rate, shared: 160 tasks take about 8 s, not 4.
        await send(160)
        await waitFor(async () => (await redis.llen(log)) >= 160, { timeoutMs: 40_000, what: '160 runs' }).catch((e: Error) => {
          throw new Error(`${e.message}\n${logs()}`)
        })
        const first = await runs()
        const windows = perSecond(first)
        assert.ok(windows.length >= 6, `160 runs at 20/s took ${windows.length} s: ${windows.join(' ')}`)
        for (const c of windows) assert.ok(c <= 24, `a second with ${c} runs (limit 20/s): ${windows.join(' ')}`)
        assert.equal(new Set(first.map((r) => r.pid)).size >= 2, true, 'both workers ran tasks')

        // 2. tsq control rate_limit: 5/s for the cluster, in force within 2 s on both workers.
        await redis.del(log)
        await send(300, 1000)
        await sleep(2000)
        const control = await runTsq(['control', 'rate_limit', 'rate.tick', '5/s', '-b', broker, '--timeout', '2'], {
          env: { TSQ_RESULT_BACKEND: REDIS_DB },
        })
        assert.equal(control.code, 0, control.stderr)
        for (const w of workers) assert.match(control.stdout, new RegExp(`${w.nodename}: OK`), control.stdout)
        const changedAt = Date.now()
        await sleep(6000)
        const slowed = (await runs()).filter((r) => r.at >= changedAt + 2000)
        assert.ok(slowed.length <= 5 * 4 + 3, `${slowed.length} runs in the 4 s at 5/s`)
        assert.ok(slowed.length >= 5 * 4 - 8, `${slowed.length} runs in the 4 s at 5/s (too few: the rate was not used)`)

        // 3. Back to 20/s, then kill -9 the solo worker mid-stream: every task runs once, the other takes the whole rate.
        const back = await runTsq(['control', 'rate_limit', 'rate.tick', '20/s', '-b', broker, '--timeout', '2'], {
          env: { TSQ_RESULT_BACKEND: REDIS_DB },
        })
        assert.equal(back.code, 0, back.stderr)
        await sleep(1500)
        const victim = workers[0]!
        const killAt = Date.now()
        process.kill(-victim.pid, 'SIGKILL')
        await victim.exited
        const killedAt = Date.now()
        await waitFor(async () => (await redis.llen(log)) >= 300, { timeoutMs: 60_000, what: 'all 300 runs' }).catch((e: Error) => {
          throw new Error(`${e.message}\n${logs()}`)
        })
        // A second copy would come back within the visibility timeout (8 s on Redis) or at once (RabbitMQ).
        await sleep(kind === 'redis' ? 10_000 : 3000)
        const all = await runs()
        const counts = new Map<number, number>()
        for (const r of all) counts.set(r.n, (counts.get(r.n) ?? 0) + 1)
        // The loss tests' rule: a late-ack task the kill caught running (its run recorded, its ack not sent) runs again.
        const caughtRunning = new Set(all.filter((r) => r.pid === victim.pid && r.at >= killAt - 100).map((r) => r.n))
        const twice = [...counts].filter(([n, c]) => c > (caughtRunning.has(n) ? 2 : 1)).map(([n]) => n)
        assert.deepEqual(twice, [], `ran more than once: ${twice.join(', ')}`)
        assert.equal(counts.size, 300, `ran: ${counts.size} of 300`)
        // The survivor alone takes the whole rate at once (the first second after the kill), never more;
        // the copies the dead worker held come back later (Redis: after the visibility timeout), hence the gaps after.
        const survivor = perSecond(all.filter((r) => r.at >= killedAt + 500 && r.pid !== victim.pid))
        assert.ok((survivor[0] ?? 0) >= 12, `the survivor alone: ${survivor.join(' ')}`)
        for (const c of survivor) assert.ok(c <= 24, `the survivor alone: ${survivor.join(' ')}`)
      },
    )
  })
}
