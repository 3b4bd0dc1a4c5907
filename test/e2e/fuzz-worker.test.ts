// Bad input: 10,000 malformed messages interleaved with
// 1,000 valid tasks. The worker stays up, every valid task succeeds, and every
// bad message is rejected without requeue and logged in one line.
//
// One broker in CI: RabbitMQ, because there content type, encoding and headers
// are real message properties a publisher can set to anything, so it reaches
// more malformations than Redis's envelope does, and amqplib publishes the
// 11,000 messages in about a second. (Locally: TSQ_FUZZ_BROKER=redis is not
// wired; the Redis decode path is covered by the worker's own tests.)
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import amqplib from '../../src/transport/amqp/amqplib.js'
import { Redis } from 'ioredis'
import { AMQP_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { deleteCeleryQueues } from '../interop/helpers/cleanup.js'
import { startTsqWorker, type TsqWorker } from '../interop/worker-helpers/tsq-worker.js'

const BACKEND = 'redis://127.0.0.1:6379/1'
const BAD = 10_000
const GOOD = 1_000
const REJECTED_LINE = 'Received invalid task message (rejected, not requeued)'
// A body past the depth limit (the 1 MiB of '{') is Celery's decode error, rejected all the same.
const DECODE_LINE = "Can't decode message body"
const isRejection = (l: string): boolean => l.includes(REJECTED_LINE) || l.includes(DECODE_LINE)

interface Msg {
  body: Buffer
  options: amqplib.Options.Publish
}

function v2Headers(id: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
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
    argsrepr: '(1, 1)',
    kwargsrepr: '{}',
    origin: 'gen1@fuzz',
    ignore_result: false,
    ...over,
  }
}

const EMBED = { callbacks: null, errbacks: null, chain: null, chord: null }
const json = (v: unknown) => Buffer.from(JSON.stringify(v), 'utf8')

function valid(id: string, n: number): Msg {
  return {
    body: json([[n, n], {}, EMBED]),
    options: {
      contentType: 'application/json',
      contentEncoding: 'utf-8',
      headers: v2Headers(id),
      correlationId: id,
      deliveryMode: 2,
      priority: 0,
    },
  }
}

const BIG = 1024 * 1024

/** Malformations a broken or hostile publisher can produce; each must be rejected. */
const MALFORMED: readonly ((id: string, i: number) => Msg)[] = [
  // Not JSON at all, or truncated JSON.
  (id) => ({
    body: Buffer.from('{not json', 'utf8'),
    options: { contentType: 'application/json', contentEncoding: 'utf-8', headers: v2Headers(id) },
  }),
  (id, i) => ({
    body: json([[i, i], {}, EMBED]).subarray(0, 7),
    options: { contentType: 'application/json', contentEncoding: 'utf-8', headers: v2Headers(id) },
  }),
  // A content type the worker does not accept (pickle: never executed).
  (id) => ({
    body: Buffer.from([0x80, 0x04, 0x95, 0x00, 0x2e]),
    options: { contentType: 'application/x-python-serialize', contentEncoding: 'binary', headers: v2Headers(id) },
  }),
  (id) => ({ body: json([[1, 1], {}, EMBED]), options: { contentType: 'text/plain', contentEncoding: 'utf-8', headers: v2Headers(id) } }),
  // No headers: read as protocol v1, whose body must be a dict naming the task.
  () => ({ body: json([[1, 1], {}, EMBED]), options: { contentType: 'application/json', contentEncoding: 'utf-8' } }),
  () => ({ body: json({ args: [1, 1] }), options: { contentType: 'application/json', contentEncoding: 'utf-8' } }),
  // v2 headers without an id, or a task name that is not a string.
  (id) => {
    const headers = v2Headers(id)
    delete headers.id
    return { body: json([[1, 1], {}, EMBED]), options: { contentType: 'application/json', contentEncoding: 'utf-8', headers } }
  },
  (id) => ({
    body: json([[1, 1], {}, EMBED]),
    options: { contentType: 'application/json', contentEncoding: 'utf-8', headers: v2Headers(id, { task: 42 }) },
  }),
  // Well-formed JSON of the wrong shape.
  // (A dict body with v2 headers is Celery's "hybrid" form and valid, so it is not here.)
  (id) => ({
    body: json(['not a list', {}, EMBED]),
    options: { contentType: 'application/json', contentEncoding: 'utf-8', headers: v2Headers(id) },
  }),
  (id) => ({
    body: json([[1, 1], 'not a dict', EMBED]),
    options: { contentType: 'application/json', contentEncoding: 'utf-8', headers: v2Headers(id) },
  }),
  (id) => ({ body: json(null), options: { contentType: 'application/json', contentEncoding: 'utf-8', headers: v2Headers(id) } }),
  (id) => ({ body: Buffer.alloc(0), options: { contentType: 'application/json', contentEncoding: 'utf-8', headers: v2Headers(id) } }),
  // Bytes that are not UTF-8, and a plain body claiming kombu's zlib compression.
  (id) => ({
    body: Buffer.from([0xff, 0xfe, 0xfd, 0x5b, 0x5d]),
    options: { contentType: 'application/json', contentEncoding: 'utf-8', headers: v2Headers(id) },
  }),
  (id) => ({
    body: json([[1, 1], {}, EMBED]),
    options: { contentType: 'application/json', contentEncoding: 'utf-8', headers: v2Headers(id, { compression: 'application/x-gzip' }) },
  }),
]

/** Every 997th bad message is big (1 MiB): garbage, or a valid JSON string of the wrong shape. */
function bigMalformed(id: string, i: number): Msg {
  const body = i % 2 === 0 ? Buffer.alloc(BIG, 0x7b) : json('x'.repeat(BIG))
  return { body, options: { contentType: 'application/json', contentEncoding: 'utf-8', headers: v2Headers(id) } }
}

const skip = await brokerSkipReason('amqp')

describe('fuzz: 10,000 malformed messages among 1,000 valid tasks (amqp)', { skip }, () => {
  const queue = uniqueName('tsq-fuzz')
  const validIds: string[] = []
  let worker: TsqWorker | undefined
  let redis: Redis | undefined

  before(async () => {
    redis = new Redis(BACKEND, { maxRetriesPerRequest: 2 })
    worker = await startTsqWorker({
      env: { broker: AMQP_URL, backend: BACKEND, queue },
      pool: 'threads',
      concurrency: 4,
      keepLogChars: 64_000_000,
    })
  })

  after(async () => {
    await worker?.stop()
    await deleteCeleryQueues('amqp', AMQP_URL, [queue])
    if (redis) {
      for (let i = 0; i < validIds.length; i += 500) await redis.del(...validIds.slice(i, i + 500).map((id) => `celery-task-meta-${id}`))
      redis.disconnect()
    }
  })

  it('the worker stays up, all valid tasks succeed, every bad one is rejected and logged', async () => {
    const conn = await amqplib.connect(AMQP_URL)
    const started = Date.now()
    try {
      const ch = await conn.createConfirmChannel()
      let bad = 0
      for (let i = 0; i < BAD + GOOD; i += 1) {
        const id = randomUUID()
        let m: Msg
        if (i % 11 === 10) {
          validIds.push(id)
          m = valid(id, validIds.length)
        } else {
          m = bad % 997 === 996 ? bigMalformed(id, bad) : (MALFORMED[bad % MALFORMED.length] as (id: string, i: number) => Msg)(id, bad)
          bad += 1
        }
        if (!ch.publish('', queue, m.body, m.options)) await new Promise((r) => ch.once('drain', r))
      }
      await ch.waitForConfirms()
      assert.equal(bad, BAD)
      assert.equal(validIds.length, GOOD)
    } finally {
      await conn.close()
    }
    const published = Date.now()

    const rejectedCount = () => worker!.log.split('\n').filter(isRejection).length
    const summary = () => {
      const other = worker!.log.split('\n').filter((l) => /ERROR|WARNING|CRITICAL/.test(l) && !isRejection(l))
      const reasons = new Map<string, number>()
      for (const l of worker!.log.split('\n')) {
        if (!isRejection(l)) continue
        const r = l
          .slice(l.indexOf(REJECTED_LINE) + REJECTED_LINE.length)
          .replace(/[0-9a-f-]{36}/g, 'ID')
          .replace(/\[queue=.*$/, '')
          .slice(0, 120)
        reasons.set(r, (reasons.get(r) ?? 0) + 1)
      }
      const succeeded = worker!.log.split('\n').filter((l) => l.includes(' succeeded in ')).length
      return `${rejectedCount()} rejections logged, ${succeeded} tasks succeeded; by reason: ${JSON.stringify([...reasons], null, 1)}; other warnings/errors (${other.length}):\n${other.slice(0, 15).join('\n')}\n--- tail ---\n${worker!.logTail(1500)}`
    }
    await waitFor(() => rejectedCount() >= BAD || worker!.hasExited, {
      timeoutMs: Number(process.env.TSQ_FUZZ_WAIT_MS ?? 90_000),
      intervalMs: 500,
      what: `${BAD} rejections logged`,
    }).catch((e: Error) => {
      throw new Error(`${e.message}: ${summary()}`)
    })
    assert.ok(!worker!.hasExited, `worker died:\n${worker!.logTail()}`)

    const metas = await waitFor(
      async () => {
        const all: (string | null)[] = []
        for (let i = 0; i < validIds.length; i += 500)
          all.push(...(await redis!.mget(...validIds.slice(i, i + 500).map((id) => `celery-task-meta-${id}`))))
        return all.every((v) => v !== null) ? all : null
      },
      { timeoutMs: 120_000, intervalMs: 500, what: `${GOOD} results stored` },
    )
    metas.forEach((raw, i) => {
      const meta = JSON.parse(raw as string) as { status: string; result: unknown }
      assert.equal(meta.status, 'SUCCESS', raw as string)
      assert.equal(meta.result, 2 * (i + 1))
    })
    const drained = Date.now()

    // Exactly one line per bad message, and nothing requeued: the queue is empty.
    const lines = worker!.log.split('\n')
    assert.equal(
      rejectedCount(),
      BAD,
      lines
        .filter((l) => l.includes('ERROR') && !isRejection(l))
        .slice(0, 20)
        .join('\n'),
    )
    const conn2 = await amqplib.connect(AMQP_URL)
    try {
      const ch = await conn2.createChannel()
      const q = await ch.checkQueue(queue)
      assert.equal(q.messageCount, 0)
    } finally {
      await conn2.close()
    }
    assert.ok(!worker!.hasExited)
    process.stderr.write(`fuzz: published ${BAD + GOOD} in ${published - started} ms, drained in ${drained - published} ms\n`)
  })
})
