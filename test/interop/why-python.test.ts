// `tsq why` against a Python Celery 5.2.6 worker (prefork -c 1) on Redis and on
// RabbitMQ, as far as Celery says: running (query_task's active, with its
// start and pool pid), reserved behind it (query_task's reserved), held for
// its ETA (not in Celery's query_task: found in its `scheduled` timer
// entries), revoked (its revoked list), finished, and held for a rate limit,
// which Celery 5.2.6 lists nowhere (seen on Redis as delivered, not acked).
// tsq-test: slow 3
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { AMQP_URL, REDIS_URL, brokerSkipReason, uniqueName } from '../helpers/brokers.js'
import { whyRun, whyUntil } from '../helpers/why.js'
import { deleteCeleryQueues, deleteResults } from './helpers/cleanup.js'
import { RESULT_BACKEND } from './helpers/context.js'
import { runTsq, startPythonWorker, type PeerEnv, type PythonWorker } from './helpers/python-worker.js'

for (const kind of ['redis', 'amqp'] as const) {
  describe(`tsq why on ${kind}, a Celery 5.2.6 worker`, { skip: await brokerSkipReason(kind) }, () => {
    const peer: PeerEnv = { broker: kind === 'amqp' ? AMQP_URL : REDIS_URL, backend: RESULT_BACKEND, queue: uniqueName(`why-py-${kind}`) }
    const env: NodeJS.ProcessEnv = { TSQ_BROKER_URL: peer.broker, TSQ_RESULT_BACKEND: peer.backend, NO_COLOR: '1' }
    const ids: string[] = []
    let worker: PythonWorker | undefined
    const call = async (task: string, args: unknown[], extra: string[] = []): Promise<string> => {
      const r = await runTsq(['call', task, '--args', JSON.stringify(args), '--queue', peer.queue, ...extra], { env, timeoutMs: 30_000 })
      assert.equal(r.code, 0, r.stderr)
      const id = r.stdout.trim()
      ids.push(id)
      return id
    }
    const until = (id: string, state: string, detail?: string) =>
      whyUntil(env, id, state, { detail, extra: ['-Q', peer.queue], timeoutMs: 30_000 })

    before(async () => {
      worker = await startPythonWorker({ peer, concurrency: 1 })
    })
    after(async () => {
      await worker?.stop(2_000)
      await deleteCeleryQueues(kind, peer.broker, [peer.queue])
      await deleteResults(RESULT_BACKEND, ids)
    })

    it('finished: exit 0 from the result backend', async () => {
      const id = await call('proj.add', [2, 3])
      const { code } = await until(id, 'succeeded')
      assert.equal(code, 0)
    })

    // Celery 5.2.6 keeps it in the rate limit's bucket, which no remote command lists: on Redis the
    // message is seen delivered and not acked; RabbitMQ shows no unacked message to anyone else.
    it(
      kind === 'redis'
        ? 'held for a rate limit, which Celery does not list: delivered and not acked, exit 4'
        : 'held for a rate limit, which Celery does not list: no trace on RabbitMQ, exit 7',
      async () => {
        const set = await runTsq(['control', 'rate_limit', 'proj.mul', '1/m', '-d', worker!.nodename], { env })
        assert.equal(set.code, 0, set.stderr)
        await until(await call('proj.mul', [1, 2]), 'succeeded')
        const id = await call('proj.mul', [3, 4])
        if (kind === 'redis') {
          const { code, answer } = await until(id, 'held', 'unacked')
          assert.equal(code, 4)
          assert.match(answer.summary, /does not say so/)
        } else {
          const { code } = await until(id, 'unknown')
          assert.equal(code, 7)
        }
      },
    )

    it('running: exit 5, on the Python node, since when', async () => {
      const { code, answer } = await until(await call('proj.sleep', [60]), 'running')
      assert.equal(code, 5)
      assert.match(answer.summary, new RegExp(`on ${worker!.nodename.replace(/[.]/g, '\\.')}`))
      assert.equal(typeof answer.facts.workers.holders[0]?.workerPid, 'number')
    })

    it('reserved behind the running task: exit 4', async () => {
      const { code, answer } = await until(await call('proj.add', [1, 1]), 'held', 'reserved')
      assert.equal(code, 4)
      assert.match(answer.summary, /^Reserved by .*waiting for a free pool slot/)
    })

    it('held for its ETA, then revoked: exit 4, then 6', async () => {
      const id = await call('proj.add', [1, 2], ['--countdown', '300'])
      const held = await until(id, 'held', 'scheduled')
      assert.match(held.answer.summary, /until its ETA/)
      const revoke = await runTsq(['control', 'revoke', id], { env })
      assert.equal(revoke.code, 0, revoke.stderr)
      const { code } = await until(id, 'revoked')
      assert.equal(code, 6)
    })

    it('an id nobody sent: exit 7', async () => {
      const { code } = await whyRun(env, '6f0c0a0e-0000-4000-8000-00000000beef', ['-Q', peer.queue])
      assert.equal(code, 7)
    })
  })
}
