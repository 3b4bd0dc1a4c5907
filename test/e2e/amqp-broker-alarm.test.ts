// A RabbitMQ memory alarm on a private node this file starts (the shared broker
// is not touched): a running worker with task events keeps receiving and
// acking tasks published before the alarm (its events wait on a connection of
// their own), says once that the broker blocks it and once that it cleared;
// `tsq call --timeout` and an app's send under task_publish_timeout fail with
// one line saying the message may still be delivered; a worker started during
// the alarm says it waits and still becomes ready; once the alarm clears every
// task has run exactly once (counted in Redis by the fixture's tasks).
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { createApp } from '../../src/app/app.js'
import { sendTask } from '../../src/client/send-task.js'
import { createTransport, PublishTimeoutError } from '../../src/transport/index.js'
import { brokerSkipReason, REDIS_URL, uniqueName, waitFor } from '../helpers/brokers.js'
import { runTsq, startWorker, type SpawnedWorker } from '../helpers/cli.js'
import { clusterSkipReason, startRabbitCluster, type RabbitCluster } from '../helpers/rabbit-cluster.js'

const APP = 'test/fixtures/tasks/conn-loss-tasks.js'
const BEFORE_ALARM = 20
const AFTER_ALARM = 5
const BLOCKED = 'Connection blocked by the broker: low on memory; waiting'
const UNBLOCKED = 'Connection unblocked by the broker: publishing resumes'

const skip = clusterSkipReason() || (await brokerSkipReason('redis'))

describe('a RabbitMQ memory alarm', { skip, timeout: 400_000 }, () => {
  let dir = ''
  let node: RabbitCluster | undefined
  let url = ''
  let redis: Redis
  const workers: SpawnedWorker[] = []
  const key = uniqueName('tsq-alarm')

  before(
    async () => {
      dir = mkdtempSync(join(tmpdir(), 'tsq-alarm-'))
      node = await startRabbitCluster(dir, 1)
      url = node.nodes[0]!.url
      redis = new Redis(REDIS_URL)
    },
    { timeout: 300_000 },
  )

  after(async () => {
    for (const w of workers) await w.stop('SIGKILL').catch(() => undefined)
    await node?.stop()
    redis?.disconnect()
    rmSync(dir, { recursive: true, force: true })
  })

  const ctl = (args: string[]) => node!.nodes[0]!.ctl(args)
  const env = () => ({
    TSQ_BROKER_URL: url,
    CELERY_BROKER_URL: '',
    TSQ_RESULT_BACKEND: '',
    CELERY_RESULT_BACKEND: '',
    TSQ_LOSS_REDIS_URL: REDIS_URL,
  })
  const runs = async (k: string) => Object.values(await redis.hgetall(`${k}:runs`)).map(Number)

  it('keeps a worker draining, fails a send past its timeout clearly, and runs every task once when it clears', async () => {
    const queue1 = uniqueName('tsq-alarm-q1')
    const queue2 = uniqueName('tsq-alarm-q2')
    // -E: a task event per task, so the worker publishes all along, as the probe's did.
    const w1 = await startWorker(['-A', APP, '-P', 'solo', '-c', '1', '-Q', queue1, '-E', '-l', 'INFO'], {
      nodename: `${uniqueName('alarm1')}@t`,
      env: env(),
    })
    workers.push(w1)
    const sender = await createTransport(url)
    await sender.connect()
    for (let i = 0; i < BEFORE_ALARM; i++) await sendTask(sender, 'closs.work', { args: [key, 250], queue: queue1 })
    await sender.close()

    await ctl(['set_vm_memory_high_watermark', 'absolute', '1'])
    await waitFor(() => w1.output().includes(BLOCKED), { timeoutMs: 30_000, what: `worker 1 saying "${BLOCKED}"` })
    // A prefetch window of 4: all 20 run only if the acks go on under the alarm.
    await waitFor(async () => (await runs(key)).length === BEFORE_ALARM, {
      timeoutMs: 60_000,
      what: `${BEFORE_ALARM} tasks run during the alarm`,
    })

    const call = await runTsq(['call', 'closs.work', '--args', JSON.stringify([`${key}:call`, 0]), '-Q', queue1, '--timeout', '2'], {
      env: env(),
      timeoutMs: 30_000,
    })
    assert.equal(call.code, 69, `tsq call --timeout 2 under the alarm:\n${call.stdout}${call.stderr}`)
    assert.match(call.stderr, /the broker blocks publishing \(low on memory\); waiting up to 2 s/)
    assert.match(
      call.stderr,
      /^Error: publish to exchange '' key '[^']+' not confirmed within 2 s: the broker blocks publishing \(low on memory\); the message may still be delivered/m,
    )
    assert.equal(call.stdout, '')

    const app = createApp({ name: 'alarm', broker: url, conf: { task_publish_timeout: 2 } })
    try {
      await assert.rejects(app.sendTask('closs.work', [`${key}:app`, 0], {}, { queue: queue1 }), (error: unknown) => {
        assert.ok(error instanceof PublishTimeoutError, String(error))
        assert.equal(error.mayBeDelivered, true)
        assert.match(
          error.message,
          /not confirmed within 2 s: the broker blocks publishing \(low on memory\); the message may still be delivered/,
        )
        return true
      })
    } finally {
      await app.close()
    }

    // Started during the alarm: it says it waits to publish, and is ready all the same.
    const w2 = await startWorker(['-A', APP, '-P', 'solo', '-c', '1', '-Q', queue2, '-l', 'INFO'], {
      nodename: `${uniqueName('alarm2')}@t`,
      env: env(),
      readyTimeoutMs: 60_000,
    })
    workers.push(w2)
    assert.ok(w2.output().includes(BLOCKED), `worker 2 (started during the alarm) did not say it waits:\n${w2.output()}`)

    await ctl(['set_vm_memory_high_watermark', '0.4'])
    await waitFor(() => w1.output().includes(UNBLOCKED) && w2.output().includes(UNBLOCKED), {
      timeoutMs: 30_000,
      what: 'both workers saying the block cleared',
    })
    const sender2 = await createTransport(url)
    await sender2.connect()
    for (let i = 0; i < AFTER_ALARM; i++) await sendTask(sender2, 'closs.work', { args: [key, 0], queue: queue2 })
    await sender2.close()
    await waitFor(async () => (await runs(key)).length === BEFORE_ALARM + AFTER_ALARM, {
      timeoutMs: 30_000,
      what: 'the tasks sent after the alarm run',
    })

    // Let anything still in flight land, then count: every task once, the timed-out sends at most once.
    await new Promise((r) => setTimeout(r, 1_000))
    assert.deepEqual(await runs(key), Array(BEFORE_ALARM + AFTER_ALARM).fill(1))
    for (const k of [`${key}:call`, `${key}:app`])
      assert.ok(
        (await runs(k)).every((n) => n === 1),
        `${k} ran more than once`,
      )
    for (const w of [w1, w2]) {
      const out = w.output()
      assert.equal(out.split(BLOCKED).length - 1, 1, `said blocked once:\n${out}`)
      assert.equal(out.split(UNBLOCKED).length - 1, 1, `said unblocked once:\n${out}`)
    }
    assert.equal(await w1.stop(), 0)
    assert.equal(await w2.stop(), 0)
  })
})
