// Dedup ids in Redis, one key per id, each change one Lua script (atomic), the
// rules of rules.ts as BullMQ's deduplicateJob writes them. Keys (documented
// in docs/deduplication.md):
//   tsq:dedup:<task>:<id>       the entry: JSON {taskId, mode, etaMs, started, since},
//                               its TTL the id's time left (none: until released)
//   tsq:dedup-gone:<task id>    a replaced task: the id of the one that replaced it,
//                               until a day past its ETA; its worker drops it then
import type { Redis } from 'ioredis'
import { scanAll, storeClient } from '../redis-store.js'
import { GONE_KEEP_MS, type ClaimAnswer, type DedupEntry, type DedupListing, type DedupRequest, type OfferAnswer } from './rules.js'
import type { DedupStore } from './store.js'

export const DEDUP_PREFIX = 'tsq:dedup:'
export const GONE_PREFIX = 'tsq:dedup-gone:'

// ARGV: taskId, the new entry, ttlMs (0: none), extend, replace, now, gone prefix, gone keep ms.
const OFFER_LUA = `
local ttl = tonumber(ARGV[3])
local function put(keep)
  if keep then redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
  elseif ttl > 0 then redis.call('SET', KEYS[1], ARGV[2], 'PX', ttl)
  else redis.call('SET', KEYS[1], ARGV[2]) end
end
local raw = redis.call('GET', KEYS[1])
local ok, cur = false, nil
if raw then ok, cur = pcall(cjson.decode, raw) end
if not ok or type(cur) ~= 'table' then put(false) return {1, ''} end
if cur.taskId == ARGV[1] then return {1, ''} end
local now = tonumber(ARGV[6])
if ARGV[5] == '1' then
  if tonumber(cur.etaMs) > now and cur.started ~= true then
    redis.call('SET', ARGV[7] .. cur.taskId, ARGV[1], 'PX', math.floor(tonumber(cur.etaMs) - now + tonumber(ARGV[8])))
    put(ARGV[4] ~= '1' and ttl > 0)
    return {1, cur.taskId}
  end
  return {0, cur.taskId, redis.call('PTTL', KEYS[1])}
end
if ARGV[4] == '1' and ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return {0, cur.taskId, redis.call('PTTL', KEYS[1])}
`

// KEYS: the entry, the task's gone mark. ARGV: taskId.
const CLAIM_LUA = `
local by = redis.call('GET', KEYS[2])
if by then
  redis.call('DEL', KEYS[2])
  return {0, by}
end
local raw = redis.call('GET', KEYS[1])
if raw then
  local ok, cur = pcall(cjson.decode, raw)
  if ok and type(cur) == 'table' and cur.taskId == ARGV[1] and cur.started ~= true then
    cur.started = true
    redis.call('SET', KEYS[1], cjson.encode(cur), 'KEEPTTL')
  end
end
return {1, ''}
`

const RELEASE_LUA = `
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local ok, cur = pcall(cjson.decode, raw)
if ok and type(cur) == 'table' and cur.taskId == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`

interface DedupCommands {
  tsqDedupOffer(
    key: string,
    taskId: string,
    entry: string,
    ttlMs: number,
    extend: string,
    replace: string,
    now: number,
    gonePrefix: string,
    goneKeepMs: number,
  ): Promise<[number, string, number?]>
  tsqDedupClaim(key: string, gone: string, taskId: string): Promise<[number, string]>
  tsqDedupRelease(key: string, taskId: string): Promise<number>
}

export class RedisDedupStore implements DedupStore {
  readonly kind = 'redis' as const
  private readonly redis: Redis & DedupCommands

  constructor(readonly url: string) {
    const redis = storeClient(url, 'tsq-dedup')
    redis.defineCommand('tsqDedupOffer', { numberOfKeys: 1, lua: OFFER_LUA })
    redis.defineCommand('tsqDedupClaim', { numberOfKeys: 2, lua: CLAIM_LUA })
    redis.defineCommand('tsqDedupRelease', { numberOfKeys: 1, lua: RELEASE_LUA })
    this.redis = redis as Redis & DedupCommands
  }

  async offer(r: DedupRequest, now = Date.now()): Promise<OfferAnswer> {
    const entry: Omit<DedupEntry, 'expiresAt'> = { taskId: r.taskId, mode: r.mode, etaMs: r.etaMs, started: false, since: now }
    const [ok, taskId, pttl] = await this.redis.tsqDedupOffer(
      DEDUP_PREFIX + r.key,
      r.taskId,
      JSON.stringify(entry),
      r.ttlMs ?? 0,
      r.extend ? '1' : '0',
      r.replace ? '1' : '0',
      now,
      GONE_PREFIX,
      GONE_KEEP_MS,
    )
    if (Number(ok) === 1) return { stands: true, replaced: taskId ? String(taskId) : null }
    const left = Number(pttl)
    return { stands: false, taskId: String(taskId), leftMs: left < 0 ? null : left }
  }

  async claim(key: string, taskId: string): Promise<ClaimAnswer> {
    const [go, by] = await this.redis.tsqDedupClaim(DEDUP_PREFIX + key, GONE_PREFIX + taskId, taskId)
    return Number(go) === 1 ? { go: true } : { go: false, by: String(by) }
  }

  async release(key: string, taskId: string): Promise<boolean> {
    return Number(await this.redis.tsqDedupRelease(DEDUP_PREFIX + key, taskId)) === 1
  }

  async list(now = Date.now()): Promise<DedupListing[]> {
    const keys = await scanAll(this.redis, `${DEDUP_PREFIX}*`)
    const found = await Promise.all(keys.map((k) => this.get(k.slice(DEDUP_PREFIX.length), now)))
    return found.filter((r): r is DedupListing => r !== null).sort((a, b) => a.key.localeCompare(b.key))
  }

  private async get(key: string, now: number): Promise<DedupListing | null> {
    const [[, value], [, pttl]] = (await this.redis
      .multi()
      .get(DEDUP_PREFIX + key)
      .pttl(DEDUP_PREFIX + key)
      .exec()) as [[unknown, string | null], [unknown, number]]
    if (value === null) return null
    try {
      const entry = JSON.parse(value) as DedupEntry
      const leftMs = Number(pttl) < 0 ? null : Number(pttl)
      return { ...entry, key, leftMs, expiresAt: leftMs === null ? null : now + leftMs }
    } catch {
      return null
    }
  }

  async remove(key: string): Promise<boolean> {
    return (await this.redis.del(DEDUP_PREFIX + key)) === 1
  }

  async close(): Promise<void> {
    this.redis.disconnect()
  }
}
