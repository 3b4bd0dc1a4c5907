// `tsq why` against a tsq worker on Redis and on RabbitMQ: each answer and its
// exit status (no trace, succeeded, failed, held for a rate limit, running,
// reserved, held for its ETA, revoked, queued with its position on Redis and
// "position unknown" on RabbitMQ), then, with the worker killed, what the
// broker still says: on Redis the delivered message in kombu's unacked hash,
// on RabbitMQ the message back in its queue. The dashboard's task page asks
// the same (GET /api/ui/why/<id>).
// tsq-test: slow 3
import assert from 'node:assert/strict'
import { hostname } from 'node:os'
import { resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { AMQP_URL, REDIS_URL, brokerSkipReason, uniqueName } from '../helpers/brokers.js'
import { callTask, embeddedBrokerEnv, ROOT, runTsq, startWorker, taskResult, tempTsqHome, type SpawnedWorker } from '../helpers/cli.js'
import { startDashboard, type SpawnedDashboard } from '../helpers/dashboard.js'
import { whyRun, whyUntil } from '../helpers/why.js'

const TASKS = resolve(ROOT, 'test/fixtures/tasks/interop-tasks.js')

async function dropQueues(kind: 'redis' | 'amqp', queues: string[]): Promise<void> {
  if (kind === 'amqp') {
    const amqplib = await import('amqplib')
    const conn = await amqplib.connect(AMQP_URL)
    const ch = await conn.createChannel()
    for (const q of queues) await ch.deleteQueue(q).catch(() => undefined)
    await conn.close().catch(() => undefined)
    return
  }
  const { Redis } = await import('ioredis')
  const redis = new Redis(REDIS_URL)
  try {
    for (const q of queues) await redis.del(q, `${q}\x06\x163`, `${q}\x06\x166`, `${q}\x06\x169`)
    // What the killed worker held, left in kombu's unacked hash.
    const held = await redis.hgetall('unacked')
    for (const [tag, value] of Object.entries(held))
      if (queues.some((q) => value.includes(`"${q}"`))) await redis.multi().hdel('unacked', tag).zrem('unacked_index', tag).exec()
  } finally {
    redis.disconnect()
  }
}

function suite(kind: 'redis' | 'amqp', broker: string, skip: string | false): void {
  describe(`tsq why on ${kind}, a tsq worker`, { skip }, () => {
    const queue = uniqueName('why')
    const idle = uniqueName('why-idle')
    const nodename = `why-${kind}-${process.pid}@${hostname()}`
    let env: NodeJS.ProcessEnv
    let worker: SpawnedWorker | undefined
    let dashboard: SpawnedDashboard | undefined
    const ids: Record<string, string> = {}
    const call = (task: string, args: unknown[], extra: string[] = []) => callTask(env, task, args, ['--queue', queue, ...extra])
    const why = (id: string, extra: string[] = []) => whyRun(env, id, ['-Q', queue, ...extra])

    before(async () => {
      const home = tempTsqHome()
      env = embeddedBrokerEnv(home, { TSQ_BROKER_URL: broker, TSQ_RESULT_BACKEND: `file://${home}/results`, NO_COLOR: '1' })
      worker = await startWorker(
        ['-A', TASKS, '-Q', queue, '-c', '1', '-P', 'solo', '-l', 'INFO', '--without-gossip', '--without-mingle'],
        {
          env,
          nodename,
        },
      )
      dashboard = await startDashboard([], { env })
    })

    after(async () => {
      await dashboard?.stop()
      await worker?.stop('SIGKILL')
      await dropQueues(kind, [queue, idle])
    })

    it('an id nobody sent: no trace of it, exit 7', async () => {
      const { code, answer } = await why('6f0c0a0e-0000-4000-8000-00000000dead')
      assert.equal(code, 7)
      assert.equal(answer.state, 'unknown')
      assert.match(answer.summary, /^No trace of it/)
      assert.deepEqual(answer.facts.workers.replied, [nodename])
    })

    it('succeeded (exit 0) and failed (exit 1, the exception said)', async () => {
      const ok = await call('proj.add', [2, 3])
      assert.equal((await taskResult(env, ok)).status, 'SUCCESS')
      const a = await why(ok)
      assert.deepEqual([a.code, a.answer.state], [0, 'succeeded'])
      const bad = await call('proj.fail', ['boom'])
      assert.equal((await taskResult(env, bad)).status, 'FAILURE')
      const b = await why(bad)
      assert.deepEqual([b.code, b.answer.state], [1, 'failed'])
      assert.match(b.answer.summary, /boom/)
    })

    it('held for its rate limit: exit 4, the rate and the wait for its next token', async () => {
      const set = await runTsq(['control', 'rate_limit', 'proj.mul', '1/m', '-d', nodename], { env })
      assert.equal(set.code, 0, set.stderr)
      assert.equal((await taskResult(env, await call('proj.mul', [1, 2]))).status, 'SUCCESS')
      ids.limited = await call('proj.mul', [3, 4])
      const { code, answer } = await whyUntil(env, ids.limited, 'held', { detail: 'rate-limited', extra: ['-Q', queue] })
      assert.equal(code, 4)
      assert.match(answer.summary, /rate limit \(1\/m\): next token in \d+ s/)
    })

    it('running: exit 5, where and since when', async () => {
      ids.running = await call('proj.sleep', [60])
      const { code, answer } = await whyUntil(env, ids.running, 'running', { extra: ['-Q', queue] })
      assert.equal(code, 5)
      assert.match(answer.summary, new RegExp(`^Running: on ${nodename.replace(/[.]/g, '\\.')} .*since`))
      assert.equal(typeof answer.facts.workers.holders[0]?.timeStart, 'number')
      // The task page's answer: the same, from the dashboard's own connection.
      const res = await fetch(`${dashboard!.url}/api/ui/why/${ids.running}`)
      assert.equal(res.status, 200)
      const page = (await res.json()) as typeof answer
      assert.deepEqual([page.state, page.exitCode, page.facts.events.source], ['running', 5, 'dashboard'])
      assert.equal(page.summary.split(' since ')[0], answer.summary.split(' since ')[0])
    })

    it('reserved behind it (exit 4), and held for its ETA (exit 4, the ETA said)', async () => {
      ids.reserved = await call('proj.add', [1, 1])
      const r = await whyUntil(env, ids.reserved, 'held', { detail: 'reserved', extra: ['-Q', queue] })
      assert.equal(r.code, 4)
      ids.scheduled = await call('proj.add', [1, 2], ['--countdown', '300'])
      const s = await whyUntil(env, ids.scheduled, 'held', { detail: 'scheduled', extra: ['-Q', queue] })
      assert.match(s.answer.summary, /until its ETA .*, in \d+ s/)
    })

    it('revoked: exit 6', async () => {
      const revoke = await runTsq(['control', 'revoke', ids.scheduled!], { env })
      assert.equal(revoke.code, 0, revoke.stderr)
      const { code, answer } = await whyUntil(env, ids.scheduled!, 'revoked', { extra: ['-Q', queue] })
      assert.equal(code, 6)
      assert.ok(answer.facts.workers.revokedBy.includes(nodename) || answer.facts.backend?.record?.status === 'REVOKED')
    })

    it(
      kind === 'redis'
        ? 'queued where no worker consumes: exit 3, its position and the depth'
        : 'queued where no worker consumes: exit 3, maybe, position unknown',
      async () => {
        await callTask(env, 'proj.add', [1, 1], ['--queue', idle])
        const second = await callTask(env, 'proj.add', [2, 2], ['--queue', idle])
        const { code, answer } = await whyRun(env, second, ['-Q', idle])
        assert.equal(code, 3)
        assert.equal(answer.state, 'queued')
        if (kind === 'redis') {
          assert.equal(answer.summary, `Queued in ${idle}: position 1 of 2 (1 message ahead of it), 0 consumers.`)
          assert.equal(answer.certain, true)
        } else {
          assert.equal(answer.certain, false)
          assert.equal(answer.detail, 'position-unknown')
          assert.match(answer.summary, new RegExp(`queue ${idle} holds 2 messages with 0 consumers; position unknown`))
        }
      },
    )

    it(
      kind === 'redis'
        ? 'its worker killed: the reserved message is delivered and not acked (held, unacked, exit 4)'
        : 'its worker killed: the reserved message is back in its queue (maybe queued, exit 3)',
      async () => {
        await worker!.stop('SIGKILL')
        worker = undefined
        const { code, answer } = await why(ids.reserved!)
        assert.deepEqual(answer.facts.workers.replied, [])
        if (kind === 'redis') {
          assert.deepEqual([code, answer.state, answer.detail], [4, 'held', 'unacked'])
        } else {
          assert.deepEqual([code, answer.state, answer.certain], [3, 'queued', false])
        }
      },
    )
  })
}

suite('redis', REDIS_URL, await brokerSkipReason('redis'))
suite('amqp', AMQP_URL, await brokerSkipReason('amqp'))
