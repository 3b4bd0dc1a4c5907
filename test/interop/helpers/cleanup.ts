// Removes what a Celery worker declares for the test-only queues, so that no
// durable queue or binding outlives the run. Talks to the broker directly,
// independent of tsq's transports (which are under test elsewhere).
import amqplib from '../../../src/transport/amqp/amqplib.js'
import { Redis } from 'ioredis'

export type InteropBroker = 'amqp' | 'redis'

/** Redis priority sub-lists of a kombu queue (spec §4.3). */
function redisQueueKeys(queue: string): string[] {
  return [queue, `${queue}\x06\x163`, `${queue}\x06\x166`, `${queue}\x06\x169`]
}

/**
 * Deletes each queue and its same-named direct exchange (what Celery creates
 * for `-Q name` and `add_consumer name`), and the given result keys.
 */
export async function deleteCeleryQueues(kind: InteropBroker, brokerUrl: string, queues: readonly string[]): Promise<void> {
  if (queues.length === 0) return
  if (kind === 'amqp') {
    const conn = await amqplib.connect(brokerUrl)
    try {
      for (const q of queues) {
        // A failed delete closes the channel, so each gets its own.
        const ch = await conn.createChannel()
        ch.on('error', () => {})
        try {
          await ch.deleteQueue(q)
          await ch.deleteExchange(q)
          await ch.close()
        } catch {
          /* already gone */
        }
      }
    } finally {
      await conn.close()
    }
    return
  }
  const redis = new Redis(brokerUrl, { lazyConnect: true, maxRetriesPerRequest: 1 })
  try {
    await redis.connect()
    const keys = queues.flatMap((q) => [...redisQueueKeys(q), `_kombu.binding.${q}`])
    await redis.del(...keys)
  } finally {
    redis.disconnect()
  }
}

/** Deletes kombu's emulated exchanges on Redis (their `_kombu.binding.<exchange>` sets), e.g. worker_direct's C.dq2. */
export async function deleteRedisExchanges(brokerUrl: string, exchanges: readonly string[]): Promise<void> {
  const redis = new Redis(brokerUrl, { lazyConnect: true, maxRetriesPerRequest: 1 })
  try {
    await redis.connect()
    await redis.del(...exchanges.map((e) => `_kombu.binding.${e}`))
  } finally {
    redis.disconnect()
  }
}

/** Deletes `celery-task-meta-<id>` keys from a Redis result backend. */
export async function deleteResults(backendUrl: string, taskIds: readonly string[]): Promise<void> {
  if (taskIds.length === 0) return
  const redis = new Redis(backendUrl, { lazyConnect: true, maxRetriesPerRequest: 1 })
  try {
    await redis.connect()
    await redis.del(...taskIds.map((id) => `celery-task-meta-${id}`))
  } finally {
    redis.disconnect()
  }
}
