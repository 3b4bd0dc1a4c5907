// kombu's ack emulation (spec §4.6): a delivered message waits in the `unacked`
// hash (indexed by delivery time in `unacked_index`) until acked; if it stays
// longer than the visibility timeout, any consumer's restore_visible puts it back.
import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import { markRedelivered, asEnvelope, serializeEnvelope } from './envelope.js'
import { UNACKED_INDEX_KEY, UNACKED_KEY, UNACKED_MUTEX_EXPIRE, UNACKED_MUTEX_KEY } from './keys.js'
import { pyDumps, pyLoads } from './py-json.js'

// Atomic stand-in for kombu's WATCH unacked / HGET / MULTI: the restore happens only
// if the hash still holds exactly what we read, so two restorers never both push.
const RESTORE_SCRIPT = `
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current ~= ARGV[2] then return -1 end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[1], ARGV[1])
for i = 3, #KEYS do
  if ARGV[4] == '1' then redis.call('LPUSH', KEYS[i], ARGV[3]) else redis.call('RPUSH', KEYS[i], ARGV[3]) end
end
return #KEYS - 2
`

// redis-py's Lock release script, as kombu's Mutex uses it.
const RELEASE_SCRIPT = `
local token = redis.call('get', KEYS[1])
if not token or token ~= ARGV[1] then
    return 0
end
redis.call('del', KEYS[1])
return 1
`

export type DestinationLookup = (exchange: string, routingKey: string) => Promise<string[]>

export class UnackedStore {
  constructor(
    private readonly conn: Redis,
    private readonly lookup: DestinationLookup,
  ) {}

  /** One MULTI of ZADD + HSET; the stored value is `[envelope, exchange, routing_key]`. */
  async add(tag: string, rawEnvelope: string, exchange: string, routingKey: string): Promise<void> {
    // The envelope text is embedded as-is so a Python restorer reads back exactly what was popped.
    const value = `[${rawEnvelope}, ${pyDumps(exchange)}, ${pyDumps(routingKey)}]`
    await this.conn.multi().zadd(UNACKED_INDEX_KEY, Date.now() / 1000, tag).hset(UNACKED_KEY, tag, value).exec()
  }

  /** Moves a held message's index score forward (ZADD XX: only while it is still unacked). */
  async defer(tag: string, untilUnixSeconds: number): Promise<void> {
    await this.conn.zadd(UNACKED_INDEX_KEY, 'XX', untilUnixSeconds, tag)
  }

  async remove(tag: string): Promise<void> {
    await this.conn.multi().zrem(UNACKED_INDEX_KEY, tag).hdel(UNACKED_KEY, tag).exec()
  }

  /**
   * kombu `restore_by_tag`: mark redelivered and push to the base list of every
   * queue the original (exchange, routing key) reaches: RPUSH (consumed next), or
   * LPUSH (back of the queue) for reject(requeue=True). Returns false if gone.
   */
  async restore(tag: string, { leftmost }: { leftmost: boolean }): Promise<boolean> {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const stored = await this.conn.hget(UNACKED_KEY, tag)
      if (stored === null) {
        await this.conn.zrem(UNACKED_INDEX_KEY, tag)
        return false
      }
      let destinations: string[] = []
      let payload = ''
      try {
        const parsed = pyLoads(stored)
        if (!Array.isArray(parsed)) throw new Error('not a list')
        const [message, exchange, routingKey] = parsed as [unknown, unknown, unknown]
        const envelope = asEnvelope(message)
        markRedelivered(envelope)
        payload = serializeEnvelope(envelope)
        destinations = await this.lookup(String(exchange ?? ''), String(routingKey ?? ''))
      } catch {
        // kombu logs "Could not restore message" and still drops it from the index.
        destinations = []
      }
      const result = await this.conn.eval(
        RESTORE_SCRIPT,
        2 + destinations.length,
        UNACKED_KEY,
        UNACKED_INDEX_KEY,
        ...destinations,
        tag,
        stored,
        payload,
        leftmost ? '1' : '0',
      )
      if (result !== -1) return true
    }
    return false
  }

  /**
   * kombu `restore_visible`: under the `unacked_mutex` lock, restore every message
   * delivered more than `visibilityTimeout` seconds ago. Returns how many, or -1
   * when another process holds the lock.
   */
  async restoreVisible(visibilityTimeout: number, limit?: number): Promise<number> {
    const token = randomUUID().replace(/-/g, '')
    const locked = await this.conn.set(UNACKED_MUTEX_KEY, token, 'PX', UNACKED_MUTEX_EXPIRE * 1000, 'NX')
    if (locked !== 'OK') return -1
    try {
      const ceil = Date.now() / 1000 - visibilityTimeout
      const args: Array<string | number> = [UNACKED_INDEX_KEY, ceil, 0, 'WITHSCORES']
      if (limit) args.push('LIMIT', 0, limit)
      const found = (await this.conn.call('ZREVRANGEBYSCORE', ...args)) as string[]
      let restored = 0
      for (let i = 0; i < found.length; i += 2) {
        if (await this.restore(found[i]!, { leftmost: false })) restored += 1
      }
      return restored
    } finally {
      await this.conn.eval(RELEASE_SCRIPT, 1, UNACKED_MUTEX_KEY, token).catch(() => undefined)
    }
  }
}
