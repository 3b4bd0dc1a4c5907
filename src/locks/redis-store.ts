// Locks in Redis. Keys (documented in docs/locks.md, so Python code can take the
// same lock with redis-py):
//   tsq:lock:<id>              the lock: a JSON record {"token", "holder", ...}, set
//                              with SET NX PX <lease>; the lease is its TTL
//   tsq:lock-token:<id>        the fencing counter: INCR at every acquisition
//   tsq:lock-holder:<node:pid> the ids a process holds, so a worker can free a dead
//                              pool process's locks at once
//   tsq:once:<id>              a `once` mark: the queued task's id, SET NX PX <timeout>
// Renewal and release compare the whole value (holder and token) in a script,
// so a deposed holder can neither extend nor free its successor's lock.
import { Redis } from 'ioredis'
// DEBUG=ioredis:* lines with their passwords masked.
import '../transport/redis/index.js'
import { redisUrlClientOptions } from '../transport/index.js'
import { recordOf, TOKEN_PREFIX } from './lock.js'
import type { AcquireResult, HolderInfo, LockListing, LockRecord, LockStore, MarkResult } from './lock.js'

export const LOCK_PREFIX = 'tsq:lock:'
export { TOKEN_PREFIX }
export const HOLDER_PREFIX = 'tsq:lock-holder:'
export const ONCE_PREFIX = 'tsq:once:'
/** A holder set outlives a worker killed with -9 by at most this (its locks' leases ran out long before). */
const HOLDER_SET_TTL_MS = 24 * 3600 * 1000

const ACQUIRE_LUA = `
if redis.call('EXISTS', KEYS[1]) == 1 then return {0, redis.call('PTTL', KEYS[1])} end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], '{"token":' .. token .. ',' .. ARGV[2], 'NX', 'PX', ARGV[1])
redis.call('SADD', KEYS[3], ARGV[3])
redis.call('PEXPIRE', KEYS[3], ARGV[4])
return {1, token}
`

const RENEW_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`

const RELEASE_LUA = `
redis.call('SREM', KEYS[2], ARGV[2])
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`

const RELEASE_HOLDER_LUA = `
local freed = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local key = ARGV[2] .. id
  local value = redis.call('GET', key)
  if value then
    local ok, record = pcall(cjson.decode, value)
    if ok and record.holder == ARGV[1] then
      redis.call('DEL', key)
      table.insert(freed, id)
    end
  end
end
redis.call('DEL', KEYS[1])
return freed
`

const MARK_LUA = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {1} end
return {0, redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}
`

const UNMARK_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`

const noop = (): void => undefined

interface LockCommands {
  tsqOnceMark(mark: string, taskId: string, ttlMs: number): Promise<[number, string?, number?]>
  tsqOnceUnmark(mark: string, taskId: string): Promise<number>
  tsqLockAcquire(
    lock: string,
    token: string,
    holderSet: string,
    leaseMs: number,
    rest: string,
    id: string,
    setTtl: number,
  ): Promise<[number, number]>
  tsqLockRenew(lock: string, value: string, leaseMs: number): Promise<number>
  tsqLockRelease(lock: string, holderSet: string, value: string, id: string): Promise<number>
  tsqLockReleaseHolder(holderSet: string, holder: string, prefix: string): Promise<string[]>
}

/** The stored value: the token first, then the rest in a fixed order, so renew/release can rebuild it exactly. */
export function encodeRecord(r: LockRecord): string {
  return `{"token":${r.token},${restOf(r)}`
}

function restOf(r: Omit<LockRecord, 'token'>): string {
  return JSON.stringify({
    id: r.id,
    holder: r.holder,
    node: r.node,
    pid: r.pid,
    task: r.task,
    taskId: r.taskId,
    acquiredAt: r.acquiredAt,
    leaseMs: r.leaseMs,
  }).slice(1)
}

/** A store's client (the locks', the dedup ids'): connected on first use, short timeouts, its errors the calls'. */
export function storeClient(url: string, name: string): Redis {
  const redis = new Redis({
    ...redisUrlClientOptions(url),
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    commandTimeout: 5000,
    connectionName: `${name}-${process.pid}`,
    retryStrategy: (attempt) => Math.min(attempt * 200, 1000),
  })
  redis.on('error', () => undefined)
  return redis
}

/** Every key matching `match` (SCAN, so a large keyspace is not blocked). */
export async function scanAll(redis: Redis, match: string): Promise<string[]> {
  const keys: string[] = []
  let cursor = '0'
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 500)
    cursor = next
    keys.push(...batch)
  } while (cursor !== '0')
  return keys
}

export class RedisLockStore implements LockStore {
  readonly kind = 'redis' as const
  private readonly redis: Redis & LockCommands
  /** Releases sent and not answered yet. */
  private readonly releasing = new Set<Promise<void>>()

  constructor(readonly url: string) {
    const redis = storeClient(url, 'tsq-locks')
    redis.defineCommand('tsqLockAcquire', { numberOfKeys: 3, lua: ACQUIRE_LUA })
    redis.defineCommand('tsqLockRenew', { numberOfKeys: 1, lua: RENEW_LUA })
    redis.defineCommand('tsqLockRelease', { numberOfKeys: 2, lua: RELEASE_LUA })
    redis.defineCommand('tsqLockReleaseHolder', { numberOfKeys: 1, lua: RELEASE_HOLDER_LUA })
    redis.defineCommand('tsqOnceMark', { numberOfKeys: 1, lua: MARK_LUA })
    redis.defineCommand('tsqOnceUnmark', { numberOfKeys: 1, lua: UNMARK_LUA })
    this.redis = redis as Redis & LockCommands
  }

  async acquire(id: string, leaseMs: number, who: HolderInfo): Promise<AcquireResult> {
    const base = recordOf(id, who, leaseMs)
    const [ok, n] = await this.redis.tsqLockAcquire(
      LOCK_PREFIX + id,
      TOKEN_PREFIX + id,
      HOLDER_PREFIX + base.holder,
      leaseMs,
      restOf(base),
      id,
      HOLDER_SET_TTL_MS,
    )
    if (Number(ok) !== 1) return { acquired: false, remainingMs: Math.max(0, Number(n)) }
    return { acquired: true, record: { ...base, token: Number(n) } }
  }

  async renew(record: LockRecord): Promise<boolean> {
    return Number(await this.redis.tsqLockRenew(LOCK_PREFIX + record.id, encodeRecord(record), record.leaseMs)) === 1
  }

  release(record: LockRecord): Promise<boolean> {
    const released = this.redis
      .tsqLockRelease(LOCK_PREFIX + record.id, HOLDER_PREFIX + record.holder, encodeRecord(record), record.id)
      .then((n) => Number(n) === 1)
    // A release nobody waits for (letGo) still finishes before close() drops the connection.
    const settled = released.then(noop, noop)
    this.releasing.add(settled)
    void settled.then(() => this.releasing.delete(settled))
    return released
  }

  /** Written at once while connected (ioredis queues commands only while it is not): one connection, so in order. */
  get releasesInOrder(): boolean {
    return this.redis.status === 'ready'
  }

  async releaseHolder(holder: string): Promise<string[]> {
    const freed = await this.redis.tsqLockReleaseHolder(HOLDER_PREFIX + holder, holder, LOCK_PREFIX)
    return Array.isArray(freed) ? freed.map(String) : []
  }

  async list(): Promise<LockListing[]> {
    const keys = await scanAll(this.redis, `${LOCK_PREFIX}*`)
    const found = await Promise.all(keys.map((k) => this.get(k.slice(LOCK_PREFIX.length))))
    return found.filter((r): r is LockListing => r !== null).sort((a, b) => a.id.localeCompare(b.id))
  }

  async get(id: string): Promise<LockListing | null> {
    const [[, value], [, pttl]] = (await this.redis
      .multi()
      .get(LOCK_PREFIX + id)
      .pttl(LOCK_PREFIX + id)
      .exec()) as [[unknown, string | null], [unknown, number]]
    if (value === null) return null
    try {
      const record = JSON.parse(value) as LockRecord
      return { ...record, id, leftMs: Math.max(0, Number(pttl)) }
    } catch {
      return null
    }
  }

  async remove(id: string): Promise<boolean> {
    return (await this.redis.del(LOCK_PREFIX + id)) === 1
  }

  async mark(id: string, taskId: string, ttlMs: number): Promise<MarkResult> {
    const [ok, holder, pttl] = await this.redis.tsqOnceMark(ONCE_PREFIX + id, taskId, ttlMs)
    if (Number(ok) === 1) return { set: true }
    return { set: false, taskId: String(holder), remainingMs: Math.max(0, Number(pttl)) }
  }

  async unmark(id: string, taskId: string): Promise<boolean> {
    return Number(await this.redis.tsqOnceUnmark(ONCE_PREFIX + id, taskId)) === 1
  }

  async close(): Promise<void> {
    if (this.releasing.size) await Promise.all(this.releasing)
    this.redis.disconnect()
  }
}
