// A task queue on RabbitMQ or Redis for the worker benches: pre-filled with
// protocol-v2 `proj.noop` messages (as Celery's client sends them), its depth
// polled, and removed afterwards.
import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import amqplib from 'amqplib'
import { Redis } from 'ioredis'
import { encodeTaskV2 } from '../../src/protocol/index.js'

/** The brokers the worker benches use: TSQ_BENCH_AMQP_URL and TSQ_BENCH_REDIS_URL (a vhost or a redis-server of one's own on a shared machine), else the local defaults. */
export const BROKER_URLS = {
  amqp: process.env.TSQ_BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672//',
  redis: process.env.TSQ_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/0',
} as const
export type BrokerKind = keyof typeof BROKER_URLS

export interface TaskQueueBroker {
  readonly kind: BrokerKind
  /** Declares `queue` as Celery does and puts `n` noop tasks in it. */
  fill(queue: string, n: number): Promise<void>
  /** Messages ready in `queue` (not counting those delivered and unacked). */
  depth(queue: string): Promise<number>
  remove(queues: string[]): Promise<void>
  close(): Promise<void>
}

function noopMessage(): { body: Buffer; headers: Record<string, unknown>; id: string; replyTo: string } {
  const m = encodeTaskV2('proj.noop', { origin: `gen${process.pid}@${hostname()}` })
  return { body: Buffer.from(m.body, 'utf8'), headers: m.headers, id: m.properties.correlationId, replyTo: m.properties.replyTo }
}

export function openTaskQueueBroker(kind: BrokerKind): Promise<TaskQueueBroker> {
  return kind === 'amqp' ? amqpBroker() : redisBroker()
}

async function amqpBroker(): Promise<TaskQueueBroker> {
  const conn = await amqplib.connect(BROKER_URLS.amqp)
  const ch = await conn.createConfirmChannel()
  const probe = await conn.createChannel()
  return {
    kind: 'amqp',
    async fill(queue, n) {
      // As Celery declares a task queue, so the worker's own declare matches.
      await ch.assertExchange(queue, 'direct', { durable: true })
      await ch.assertQueue(queue, { durable: true })
      await ch.bindQueue(queue, queue, queue)
      for (let i = 0; i < n; i += 1) {
        const m = noopMessage()
        const ok = ch.publish('', queue, m.body, {
          contentType: 'application/json',
          contentEncoding: 'utf-8',
          headers: m.headers,
          correlationId: m.id,
          replyTo: m.replyTo,
          deliveryMode: 2,
          priority: 0,
        })
        if (!ok) await new Promise((r) => ch.once('drain', r))
      }
      await ch.waitForConfirms()
    },
    async depth(queue) {
      return (await probe.checkQueue(queue)).messageCount
    },
    async remove(queues) {
      for (const q of queues) {
        const c = await conn.createChannel()
        c.on('error', () => undefined)
        await c.deleteQueue(q).catch(() => undefined)
        await c.deleteExchange(q).catch(() => undefined)
        await c.close().catch(() => undefined)
      }
    },
    async close() {
      await conn.close()
    },
  }
}

async function redisBroker(): Promise<TaskQueueBroker> {
  const redis = new Redis(BROKER_URLS.redis)
  return {
    kind: 'redis',
    async fill(queue, n) {
      for (let i = 0; i < n; i += 1000) {
        const pipe = redis.pipeline()
        for (let j = i; j < Math.min(n, i + 1000); j += 1) {
          const m = noopMessage()
          // kombu's envelope (spec §4.2).
          const envelope = {
            body: m.body.toString('base64'),
            'content-encoding': 'utf-8',
            'content-type': 'application/json',
            headers: m.headers,
            properties: {
              correlation_id: m.id,
              reply_to: m.replyTo,
              delivery_mode: 2,
              delivery_info: { exchange: '', routing_key: queue },
              priority: 0,
              body_encoding: 'base64',
              delivery_tag: randomUUID(),
            },
          }
          pipe.lpush(queue, JSON.stringify(envelope))
        }
        await pipe.exec()
      }
    },
    async depth(queue) {
      return redis.llen(queue)
    },
    async remove(queues) {
      const keys = queues.flatMap((q) => [q, `${q}\x06\x163`, `${q}\x06\x166`, `${q}\x06\x169`, `_kombu.binding.${q}`])
      if (keys.length) await redis.del(...keys)
    },
    async close() {
      redis.disconnect()
    },
  }
}
