// Deeply nested task bodies, published raw as an attacker would (100,000 and
// 6,000 levels, then a normal task): the worker refuses them with Celery's
// "Can't decode message body" line, runs the normal task, answers `inspect
// active`, ends on one TERM, and the nested messages are gone (a worker
// started again on the queue never sees them). RabbitMQ with the prefork pool,
// Redis with the threads pool, the embedded file:// broker with the solo pool.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import amqplib from '../../src/transport/amqp/amqplib.js'
import { encodeEnvelope } from '../../src/transport/kombu-envelope.js'
import { createTransport } from '../../src/transport/registry.js'
import { AMQP_URL, REDIS_URL, brokerSkipReason, uniqueName } from '../helpers/brokers.js'
import { sleep } from '../helpers/process-group.js'
import { deleteCeleryQueues } from '../interop/helpers/cleanup.js'
import { runTsq } from '../interop/helpers/python-worker.js'
import { startTsqWorker, type TsqWorker } from '../interop/worker-helpers/tsq-worker.js'

const EMBED = '{"callbacks": null, "errbacks": null, "chain": null, "chord": null}'
const DECODE_LINE = "CRITICAL/MainProcess] Can't decode message body: DecodeError(RecursionError('maximum nesting depth 1000 exceeded"

function backendUrl(): string {
  const u = new URL(REDIS_URL)
  u.pathname = '/2'
  return u.toString()
}

interface Raw {
  id: string
  body: Buffer
  headers: Record<string, unknown>
}

function taskMessage(args: string): Raw {
  const id = randomUUID()
  const headers = {
    lang: 'py',
    task: 'proj.add',
    id,
    shadow: null,
    eta: null,
    expires: null,
    group: null,
    group_index: null,
    retries: 0,
    timelimit: [null, null],
    root_id: id,
    parent_id: null,
    argsrepr: '(...)',
    kwargsrepr: '{}',
    origin: 'attacker@probe',
    ignore_result: false,
  }
  return { id, body: Buffer.from(`[${args}, {}, ${EMBED}]`, 'utf8'), headers }
}

const nested = (depth: number): Raw => taskMessage(`${'['.repeat(depth)}${']'.repeat(depth)}`)

async function publishAmqp(queue: string, messages: Raw[]): Promise<void> {
  const conn = await amqplib.connect(AMQP_URL)
  try {
    const ch = await conn.createConfirmChannel()
    // As Celery declares a task queue: durable, no arguments.
    await ch.assertQueue(queue, { durable: true })
    for (const m of messages)
      ch.publish('', queue, m.body, {
        contentType: 'application/json',
        contentEncoding: 'utf-8',
        headers: m.headers,
        correlationId: m.id,
        deliveryMode: 2,
        priority: 0,
      })
    await ch.waitForConfirms()
  } finally {
    await conn.close()
  }
}

async function publishRedis(queue: string, messages: Raw[]): Promise<void> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 2 })
  try {
    for (const m of messages) {
      const envelope = encodeEnvelope('', queue, {
        body: m.body,
        properties: {
          contentType: 'application/json',
          contentEncoding: 'utf-8',
          headers: m.headers as never,
          correlationId: m.id,
          deliveryMode: 2,
          priority: 0,
        },
      })
      await redis.lpush(queue, envelope)
    }
  } finally {
    redis.disconnect()
  }
}

/** Through tsq's own file:// transport: the embedded broker has no other client. */
async function publishFile(url: string, queue: string, messages: Raw[]): Promise<void> {
  const transport = await createTransport(url)
  try {
    await transport.connect()
    await transport.declareQueue({ name: queue, durable: true, exclusive: false, autoDelete: false })
    for (const m of messages)
      await transport.publish('', queue, {
        body: m.body,
        properties: {
          contentType: 'application/json',
          contentEncoding: 'utf-8',
          headers: m.headers as never,
          correlationId: m.id,
          deliveryMode: 2,
          priority: 0,
        },
      })
  } finally {
    await transport.close()
  }
}

async function waitForLog(worker: TsqWorker, text: string, count = 1, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (worker.log.split(text).length - 1 < count) {
    if (worker.hasExited) throw new Error(`worker exited while waiting for ${JSON.stringify(text)}\n${worker.logTail()}`)
    if (Date.now() > deadline) throw new Error(`no ${count} x ${JSON.stringify(text)} in the worker's log\n${worker.logTail()}`)
    await sleep(100)
  }
}

const fileHome = mkdtempSync(join(tmpdir(), 'tsq-nested-'))
after(() => rmSync(fileHome, { recursive: true, force: true }))

for (const [kind, pool] of [
  ['amqp', 'prefork'],
  ['redis', 'threads'],
  ['file', 'solo'],
] as const) {
  const skip = await brokerSkipReason(kind)
  const broker = kind === 'amqp' ? AMQP_URL : kind === 'redis' ? REDIS_URL : `file://${join(fileHome, 'broker')}`
  const publish = (queue: string, messages: Raw[]): Promise<void> =>
    kind === 'amqp' ? publishAmqp(queue, messages) : kind === 'redis' ? publishRedis(queue, messages) : publishFile(broker, queue, messages)

  describe(`nested task bodies do not stop a worker (${kind}, ${pool})`, { skip }, () => {
    const queue = uniqueName('tsq-nested')
    const workers: TsqWorker[] = []

    after(async () => {
      for (const w of workers) await w.stop(5_000)
      if (kind !== 'file') await deleteCeleryQueues(kind, broker, [queue])
    })

    it('refuses the nested bodies, runs the normal task, answers inspect active, ends on TERM, and never sees them again', async () => {
      const deep = nested(100_000)
      const shallow = nested(6_000)
      const normal = taskMessage('[2, 3]')
      const messages = [deep, shallow, normal]
      await publish(queue, messages)

      const env = { broker, backend: backendUrl(), queue }
      const first = await startTsqWorker({ env, pool, concurrency: 2 })
      workers.push(first)
      await waitForLog(first, `Task proj.add[${normal.id}] succeeded`)
      await waitForLog(first, DECODE_LINE, 2)
      for (const m of [deep, shallow])
        assert.match(first.log, new RegExp(`Can't decode message body: .*proj\\.add\\[${m.id}\\] \\(\\d+b, rejected, not requeued\\)`))
      assert.doesNotMatch(first.log, /Maximum call stack size exceeded/)

      const active = await runTsq(['inspect', 'active', '-b', broker, '-d', first.nodename, '-t', '10', '--json'], { timeoutMs: 30_000 })
      assert.equal(active.code, 0, `inspect active: ${active.stdout}\n${active.stderr}`)
      assert.match(active.stdout, new RegExp(first.nodename.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))

      // One TERM ends it: nothing holds a slot.
      process.kill(first.pid, 'SIGTERM')
      const ended = await Promise.race([first.exited.then(() => true), sleep(30_000).then(() => false)])
      assert.ok(ended, `one TERM did not end the worker\n${first.logTail()}`)

      // Started again: the nested messages were not requeued; a new task runs.
      const again = taskMessage('[4, 5]')
      await publish(queue, [again])
      const second = await startTsqWorker({ env, pool, concurrency: 2 })
      workers.push(second)
      await waitForLog(second, `Task proj.add[${again.id}] succeeded`)
      assert.ok(!second.log.includes("Can't decode message body"), `a nested message came back\n${second.logTail()}`)
      assert.ok(!second.log.includes(deep.id) && !second.log.includes(shallow.id))
    })
  })
}

const amqpSkip = await brokerSkipReason('amqp')

describe("a refused nested body goes to the queue's dead-letter exchange (amqp)", { skip: amqpSkip }, () => {
  const queue = uniqueName('tsq-nested-dl')
  const deadExchange = `${queue}-dlx`
  const deadQueue = `${queue}-dead`
  let worker: TsqWorker | undefined

  after(async () => {
    await worker?.stop(5_000)
    await deleteCeleryQueues('amqp', AMQP_URL, [queue, deadQueue])
    const conn = await amqplib.connect(AMQP_URL)
    try {
      const ch = await conn.createChannel()
      await ch.deleteExchange(deadExchange)
    } finally {
      await conn.close()
    }
  })

  it('is dead-lettered as rejected, and the next task runs', async () => {
    const shallow = nested(6_000)
    const normal = taskMessage('[2, 3]')
    const conn = await amqplib.connect(AMQP_URL)
    try {
      const ch = await conn.createConfirmChannel()
      await ch.assertExchange(deadExchange, 'fanout', { durable: true, autoDelete: false })
      await ch.assertQueue(deadQueue, { durable: true })
      await ch.bindQueue(deadQueue, deadExchange, '')
      // As the app's task_queues declares it (test/fixtures/tasks/dead-letter-tasks.js).
      await ch.assertQueue(queue, { durable: true, arguments: { 'x-dead-letter-exchange': deadExchange } })
      for (const m of [shallow, normal])
        ch.publish('', queue, m.body, {
          contentType: 'application/json',
          contentEncoding: 'utf-8',
          headers: m.headers,
          correlationId: m.id,
          deliveryMode: 2,
        })
      await ch.waitForConfirms()
    } finally {
      await conn.close()
    }
    process.env.TSQ_DL_QUEUE = queue
    process.env.TSQ_DL_EXCHANGE = deadExchange
    try {
      worker = await startTsqWorker({
        env: { broker: AMQP_URL, backend: backendUrl(), queue },
        module: 'test/fixtures/tasks/dead-letter-tasks.js',
        queueFromApp: true,
        pool: 'prefork',
        concurrency: 1,
      })
    } finally {
      delete process.env.TSQ_DL_QUEUE
      delete process.env.TSQ_DL_EXCHANGE
    }
    await waitForLog(worker, `Task proj.add[${normal.id}] succeeded`)
    await waitForLog(worker, DECODE_LINE)
    const check = await amqplib.connect(AMQP_URL)
    try {
      const ch = await check.createChannel()
      const dead = await ch.get(deadQueue, { noAck: true })
      assert.ok(dead, 'nothing was dead-lettered')
      assert.equal(dead.properties.correlationId, shallow.id)
      assert.equal((dead.properties.headers?.['x-death'] as Array<{ reason: string }> | undefined)?.[0]?.reason, 'rejected')
      assert.equal(dead.content.length, shallow.body.length)
    } finally {
      await check.close()
    }
  })
})
