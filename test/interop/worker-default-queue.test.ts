// Celery's task_default_queue on the tsq side (createApp({ defaultQueue })):
// a worker started without -Q consumes it, reports it in `inspect conf`, and
// sends the chain steps and chord bodies of Python clients that name no queue
// to it, as a Celery worker with the same setting does. Without it a Celery
// shop with its own default queue would see every second chain step go to
// `celery`, where nobody listens.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { REDIS_URL, brokerSkipReason, uniqueName } from '../helpers/brokers.js'
import { deleteCeleryQueues } from './helpers/cleanup.js'
import { celeryJson, pyClient, startTsqWorker, type TsqWorker, type WiEnv } from './worker-helpers/tsq-worker.js'

const skip = await brokerSkipReason('redis')

describe("the app's default queue (Celery's task_default_queue) on a tsq worker (redis)", { skip }, () => {
  const env: WiEnv = { broker: REDIS_URL, backend: 'redis://127.0.0.1:6379/1', queue: uniqueName('tsq-wi-defq') }
  let worker: TsqWorker | undefined

  before(async () => {
    worker = await startTsqWorker({ env, pool: 'threads', concurrency: 2, queueFromApp: true })
  })

  after(async () => {
    await worker?.stop()
    await deleteCeleryQueues('redis', REDIS_URL, [env.queue, 'celery'])
  })

  const withLog = (msg: string) => `${msg}\n--- tsq worker log ---\n${worker?.logTail() ?? ''}`

  it('without -Q the worker consumes the default queue and `inspect conf` reports it', async () => {
    const node = worker!.nodename
    const queues = (await celeryJson(env, ['inspect', 'active_queues', '-d', node, '-t', '5'])) as Record<string, { name: string }[]>
    assert.deepEqual(
      queues[node]?.map((q) => q.name),
      [env.queue],
      JSON.stringify(queues),
    )
    const conf = (await celeryJson(env, ['inspect', 'conf', '-d', node, '-t', '5'])) as Record<string, Record<string, unknown>>
    assert.equal(conf[node]?.task_default_queue, env.queue, JSON.stringify(conf))
  })

  it('a Python chain that names no queue runs every step on it: add(1,2) | add(3) | mul(10) == 60', async () => {
    const out = await pyClient<{ result?: unknown }>(env, ['chain', '20', 'plain'])
    assert.equal(out.result, 60, withLog(JSON.stringify(out)))
  })

  it('a Python chord whose body names no queue has its body run on it', async () => {
    const out = await pyClient<{ result?: unknown; body: { state: string } }>(env, ['chord', '5', '30', '-1', 'plain'])
    assert.equal(out.result, 20, withLog(JSON.stringify(out)))
    assert.equal(out.body.state, 'SUCCESS')
  })
})
