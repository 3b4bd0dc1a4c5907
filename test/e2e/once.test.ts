// A task's `once` option (celery-once): on Redis, RabbitMQ (the amqp:// lock store)
// and the embedded file:// broker, 100 concurrent sends of one key while it is
// queued or running give one task and 99 AlreadyQueued (or, graceful, the queued
// task's AsyncResult); once the task ends (success, failure, revoke) the next
// send goes through. Results in Redis (db 9) for all three.
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { AlreadyQueued, createApp, type App, type AsyncResult, type Task } from '../../src/index.js'
import { AMQP_URL, brokerSkipReason, REDIS_URL, uniqueName, waitFor } from '../helpers/brokers.js'
import { startWorker, type SpawnedWorker } from '../helpers/cli.js'
// @ts-expect-error: a plain JS fixture
import { defineOnceTasks } from '../fixtures/tasks/once-tasks.js'

const APP = 'test/fixtures/tasks/once-tasks.js'
const BACKEND = REDIS_URL.replace(/\/\d*$/, '/9')
const redisSkip = await brokerSkipReason('redis')
const amqpSkip = await brokerSkipReason('amqp')

for (const [kind, broker, skip] of [
  ['redis', REDIS_URL.replace(/\/\d*$/, '/8'), redisSkip],
  ['amqp', AMQP_URL, amqpSkip || redisSkip],
  ['file', `file://${mkdtempSync(join(tmpdir(), 'tsq-once-'))}`, redisSkip],
] as const) {
  describe(`once on ${kind}`, { skip, timeout: 240_000 }, () => {
    const queue = uniqueName(`once-${kind}`)
    let worker: SpawnedWorker
    let app: App
    let tasks: { gate: Task }
    let redis: Redis
    const keys: string[] = []

    before(async () => {
      redis = new Redis(BACKEND)
      app = createApp({ name: 'once-test', broker, resultBackend: BACKEND })
      tasks = defineOnceTasks(app)
      worker = await startWorker(
        [
          '-A',
          APP,
          '-b',
          broker,
          '--result-backend',
          BACKEND,
          '-Q',
          queue,
          '-P',
          'solo',
          '-c',
          '1',
          '--prefetch-multiplier',
          '4',
          '-l',
          'INFO',
          '--without-mingle',
          '--without-gossip',
        ],
        {
          nodename: uniqueName('once') + '@h',
          readyTimeoutMs: 120_000,
          env: { TSQ_TEST_REDIS_URL: BACKEND },
        },
      )
    })
    after(async () => {
      await worker?.stop('SIGKILL').catch(() => undefined)
      await app?.close().catch(() => undefined)
      if (redis) {
        if (keys.length) await redis.del(...keys.map((k) => `${k}:gate`)).catch(() => undefined)
        redis.disconnect()
      }
    })

    const send = (key: string, options: Record<string, unknown> = {}, outcome = 'ok') => {
      keys.push(key)
      return tasks.gate.applyAsync([key, outcome], {}, { queue, ...options })
    }

    it('100 sends of one key while it is queued: one task, 99 AlreadyQueued; graceful gives its AsyncResult; after success the next goes through', async () => {
      const key = uniqueName('k')
      const sent = await Promise.allSettled(Array.from({ length: 100 }, () => send(key)))
      const ok = sent.filter((s) => s.status === 'fulfilled')
      const refused = sent.filter((s): s is PromiseRejectedResult => s.status === 'rejected')
      assert.equal(
        ok.length,
        1,
        refused
          .map((r) => String(r.reason))
          .slice(0, 3)
          .join('\n'),
      )
      assert.equal(refused.length, 99)
      const first = (ok[0] as PromiseFulfilledResult<AsyncResult>).value
      for (const r of refused) {
        assert.ok(r.reason instanceof AlreadyQueued, String(r.reason))
        assert.equal(r.reason.taskId, first.id)
        assert.ok(r.reason.remainingMs > 0 && r.reason.remainingMs <= 600_000)
        assert.ok(r.reason.countdown > 0)
      }
      const graceful = await send(key, { once: { graceful: true } })
      assert.equal(graceful.id, first.id)
      await redis.set(`${key}:gate`, '1')
      assert.equal(await first.get({ timeout: 60 }), key)
      const next = await send(key)
      assert.notEqual(next.id, first.id)
      assert.equal(await next.get({ timeout: 60 }), key)
    })

    it('after a failure the next send goes through', async () => {
      const key = uniqueName('k')
      const first = await send(key, {}, 'fail')
      await assert.rejects(send(key), AlreadyQueued)
      await redis.set(`${key}:gate`, '1')
      await assert.rejects(first.get({ timeout: 60 }), /failed on purpose/)
      const next = await send(key)
      await next.get({ timeout: 60 })
    })

    it('a task revoked before it runs clears its mark when the worker discards it', async () => {
      // The solo worker is busy with a blocker, so the task waits behind it.
      const blocker = uniqueName('k')
      const blocked = await send(blocker)
      const key = uniqueName('k')
      await redis.set(`${key}:gate`, '1')
      const first = await send(key)
      await assert.rejects(send(key), AlreadyQueued)
      await app.control.revoke(first.id, { timeout: 1 })
      await redis.set(`${blocker}:gate`, '1')
      await blocked.get({ timeout: 60 })
      await waitFor(async () => ((await first.state) === 'REVOKED' ? true : null), { timeoutMs: 60_000, what: 'the task revoked' }).catch(
        async (error: Error) => {
          throw new Error(`${error.message} (state ${await first.state}); worker:\n${worker.output().slice(-3000)}`)
        },
      )
      const next = await send(key)
      assert.notEqual(next.id, first.id)
      await next.get({ timeout: 60 })
      assert.match(worker.output(), new RegExp(`Discarding revoked task: once\\.gate\\[${first.id}\\]`))
    })
  })
}
