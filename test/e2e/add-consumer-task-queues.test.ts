// `tsq control add_consumer Q` and `tsq worker -Q Q` for a queue that
// task_queues defines declare it as defined (Celery's add_task_queue), here
// with x-max-priority 10 on RabbitMQ: a later declare with the same argument
// is accepted and one without it is refused (406), which is how a Python
// worker of the same app would find it.
import assert from 'node:assert/strict'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import amqplib from '../../src/transport/amqp/amqplib.js'
import { AMQP_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { ROOT, embeddedBrokerEnv, runTsq, startWorker, tempTsqHome, type SpawnedWorker } from '../helpers/cli.js'

const MODULE = join(ROOT, 'test/fixtures/tasks/cfg-conf-env.js')
const skip = await brokerSkipReason('amqp')

/** Declares `queue` with `args` on a channel of its own: true, or the broker's refusal. */
async function declareWith(queue: string, args: Record<string, unknown>): Promise<true | string> {
  const conn = await amqplib.connect(AMQP_URL)
  try {
    const ch = await conn.createChannel()
    ch.on('error', () => undefined)
    try {
      await ch.assertQueue(queue, { durable: true, arguments: args })
      await ch.close()
      return true
    } catch (error) {
      return (error as Error).message
    }
  } finally {
    await conn.close().catch(() => undefined)
  }
}

describe("[task_queues] -Q and add_consumer use the queue's definition", { skip }, () => {
  const home = tempTsqHome()
  const DEFINED = uniqueName('cfg-defined')
  const ADDED = uniqueName('cfg-added')
  const conf = {
    task_queues: [
      { name: DEFINED, queue_arguments: { 'x-max-priority': 10 } },
      { name: ADDED, queue_arguments: { 'x-max-priority': 10 } },
    ],
  }
  const env = embeddedBrokerEnv(home, { TSQ_BROKER_URL: AMQP_URL, CFG_CONF: JSON.stringify(conf), NO_COLOR: '1' })
  const node = `addq-${process.pid}@${hostname()}`
  let worker: SpawnedWorker | undefined

  after(async () => {
    await worker?.stop()
    const conn = await amqplib.connect(AMQP_URL)
    const ch = await conn.createChannel()
    ch.on('error', () => undefined)
    for (const q of [DEFINED, ADDED]) {
      await ch.deleteQueue(q).catch(() => undefined)
      await ch.deleteExchange(q).catch(() => undefined)
    }
    await conn.close().catch(() => undefined)
  })

  it('-Q declares the defined queue with its arguments; add_consumer likewise', async () => {
    worker = await startWorker(['-A', MODULE, '-P', 'solo', '-l', 'INFO', '-Q', DEFINED, '--without-mingle', '--without-gossip'], {
      env,
      nodename: node,
    })
    assert.equal(await declareWith(DEFINED, { 'x-max-priority': 10 }), true)
    assert.match(String(await declareWith(DEFINED, {})), /PRECONDITION_FAILED.*x-max-priority/)
    const res = await runTsq(['control', 'add_consumer', ADDED, '-d', node, '--json'], { env })
    assert.equal(res.code, 0, res.stderr)
    await waitFor(async () => (await declareWith(ADDED, { 'x-max-priority': 10 })) === true, {
      timeoutMs: 20_000,
      what: `${ADDED} declared with x-max-priority 10`,
    })
    assert.match(String(await declareWith(ADDED, {})), /PRECONDITION_FAILED.*x-max-priority/)
  })
})
