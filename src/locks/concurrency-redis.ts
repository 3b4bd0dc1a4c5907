// Concurrency per key in Redis. Keys, per scope S (a task's name unless given):
//   tsq:cc:S:q:<key>     the key's backlog: a list of parked messages, oldest first
//   tsq:cc:S:ring        the keys with a backlog, served in turn (RPOPLPUSH onto itself)
//   tsq:cc:S:run:<key>   the key's running slots: a sorted set, token → lease end (ms)
//   tsq:cc:S:leases      every slot of the scope, token → lease end (the sweep's index)
//   tsq:cc:S:slot        token → key
//   tsq:cc:S:inflight    token → the claimed message a slot holds unacked
//   tsq:cc:S:parked      the ids parked and not claimed yet (a broker's redelivery is not parked twice)
//   tsq:cc:S:token       the fencing counter: INCR at every slot taken
//   tsq:cc:S:meta        the limit last applied (for inspect)
//   tsq:cc:scopes        the scopes, for inspect, the dashboard and /metrics
// Lease ends are Redis's own clock (TIME), so workers' clocks need not agree.
// A slot whose lease ran out is freed by the next call of any worker, and the
// claimed message it held unacked goes back to the front of its key's backlog.
import type { Redis } from 'ioredis'
// DEBUG=ioredis:* lines with their passwords masked.
import '../transport/redis/index.js'
import { storeClient } from './redis-store.js'
import type { AdmitResult, ClaimedEntry, ConcurrencyRule, ConcurrencyScopeStats, ConcurrencyStore, ParkedEntry } from './concurrency.js'

export const CONCURRENCY_PREFIX = 'tsq:cc:'
const SCOPES = `${CONCURRENCY_PREFIX}scopes`

const COMMON = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function requeue(P, k, entry)
  if redis.call('LPUSH', P .. 'q:' .. k, entry) == 1 then redis.call('RPUSH', P .. 'ring', k) end
end
local function free(P, token)
  local k = redis.call('HGET', P .. 'slot', token)
  redis.call('ZREM', P .. 'leases', token)
  redis.call('HDEL', P .. 'slot', token)
  if k then redis.call('ZREM', P .. 'run:' .. k, token) end
  return k
end
local function sweep(P, now)
  for _, token in ipairs(redis.call('ZRANGEBYSCORE', P .. 'leases', '-inf', now, 'LIMIT', 0, 100)) do
    local k = free(P, token)
    local entry = redis.call('HGET', P .. 'inflight', token)
    if entry then
      redis.call('HDEL', P .. 'inflight', token)
      if k then requeue(P, k, entry) end
    end
  end
end
local function take(P, k, lease, now)
  local token = redis.call('INCR', P .. 'token')
  redis.call('ZADD', P .. 'leases', now + lease, token)
  redis.call('HSET', P .. 'slot', token, k)
  redis.call('ZADD', P .. 'run:' .. k, now + lease, token)
  return token
end
`

// ARGV: prefix, key, limit, lease ms, entry, task id, scope
const ADMIT_LUA = `${COMMON}
local P, k, limit, lease = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local now = now_ms()
sweep(P, now)
redis.call('SADD', '${SCOPES}', ARGV[7])
redis.call('HSET', P .. 'meta', 'limit', limit)
local q = P .. 'q:' .. k
if redis.call('LLEN', q) == 0 and redis.call('ZCARD', P .. 'run:' .. k) < limit then
  return {1, take(P, k, lease, now)}
end
if redis.call('SADD', P .. 'parked', ARGV[6]) == 0 then return {2, 0} end
if redis.call('RPUSH', q, ARGV[5]) == 1 then redis.call('RPUSH', P .. 'ring', k) end
return {0, 0}
`

// ARGV: prefix, limit, lease ms. Visits each key with a backlog at most once, from where the last claim left off.
const CLAIM_LUA = `${COMMON}
local P, limit, lease = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
sweep(P, now)
local ring = P .. 'ring'
local n = redis.call('LLEN', ring)
for i = 1, n do
  local k = redis.call('RPOPLPUSH', ring, ring)
  if not k then break end
  local q = P .. 'q:' .. k
  if redis.call('LLEN', q) == 0 then
    redis.call('LREM', ring, 0, k)
  elseif redis.call('ZCARD', P .. 'run:' .. k) < limit then
    local entry = redis.call('LPOP', q)
    if redis.call('LLEN', q) == 0 then redis.call('LREM', ring, 0, k) end
    local ok, parsed = pcall(cjson.decode, entry)
    if ok and type(parsed) == 'table' and parsed.id then redis.call('SREM', P .. 'parked', parsed.id) end
    local token = take(P, k, lease, now)
    redis.call('HSET', P .. 'inflight', token, entry)
    return {token, k, entry}
  end
end
return false
`

// ARGV: prefix, lease ms, tokens... Returns the tokens no longer held.
const RENEW_LUA = `${COMMON}
local P, lease = ARGV[1], tonumber(ARGV[2])
local now = now_ms()
local lost = {}
for i = 3, #ARGV do
  local t = ARGV[i]
  local score = redis.call('ZSCORE', P .. 'leases', t)
  if score and tonumber(score) > now then
    redis.call('ZADD', P .. 'leases', now + lease, t)
    local k = redis.call('HGET', P .. 'slot', t)
    if k then redis.call('ZADD', P .. 'run:' .. k, now + lease, t) end
  else
    table.insert(lost, t)
  end
end
sweep(P, now)
return lost
`

// ARGV: prefix, token
const RELEASE_LUA = `${COMMON}
redis.call('HDEL', ARGV[1] .. 'inflight', ARGV[2])
if free(ARGV[1], ARGV[2]) then return 1 end
return 0
`

// ARGV: prefix, token
const REQUEUE_LUA = `${COMMON}
local P, token = ARGV[1], ARGV[2]
local entry = redis.call('HGET', P .. 'inflight', token)
redis.call('HDEL', P .. 'inflight', token)
local k = free(P, token)
if entry and k then requeue(P, k, entry) end
return 1
`

// ARGV: prefix. Returns {limit, {key, backlog, running}...}
const STATS_LUA = `${COMMON}
local P = ARGV[1]
sweep(P, now_ms())
local seen, out = {}, {}
for _, k in ipairs(redis.call('LRANGE', P .. 'ring', 0, -1)) do seen[k] = true end
for _, k in ipairs(redis.call('HVALS', P .. 'slot')) do seen[k] = true end
for k in pairs(seen) do
  table.insert(out, {k, redis.call('LLEN', P .. 'q:' .. k), redis.call('ZCARD', P .. 'run:' .. k)})
end
return {redis.call('HGET', P .. 'meta', 'limit') or false, out}
`

interface ConcurrencyCommands {
  tsqCcAdmit(...argv: Array<string | number>): Promise<[number, number]>
  tsqCcClaim(...argv: Array<string | number>): Promise<[number, string, string] | null>
  tsqCcRenew(...argv: Array<string | number>): Promise<string[]>
  tsqCcRelease(...argv: Array<string | number>): Promise<number>
  tsqCcRequeue(...argv: Array<string | number>): Promise<number>
  tsqCcStats(...argv: Array<string | number>): Promise<[string | null, Array<[string, number, number]>]>
}

const prefixOf = (scope: string): string => `${CONCURRENCY_PREFIX}${scope}:`

export class RedisConcurrencyStore implements ConcurrencyStore {
  private readonly redis: Redis & ConcurrencyCommands

  constructor(readonly url: string) {
    const redis = storeClient(url, 'tsq-concurrency')
    const scripts = {
      tsqCcAdmit: ADMIT_LUA,
      tsqCcClaim: CLAIM_LUA,
      tsqCcRenew: RENEW_LUA,
      tsqCcRelease: RELEASE_LUA,
      tsqCcRequeue: REQUEUE_LUA,
      tsqCcStats: STATS_LUA,
    }
    for (const [name, lua] of Object.entries(scripts)) redis.defineCommand(name, { numberOfKeys: 0, lua })
    this.redis = redis as Redis & ConcurrencyCommands
  }

  async admit(rule: ConcurrencyRule, key: string, entry: ParkedEntry): Promise<AdmitResult> {
    const [how, token] = await this.redis.tsqCcAdmit(
      prefixOf(rule.scope),
      key,
      rule.limit,
      rule.leaseMs,
      JSON.stringify(entry),
      entry.id,
      rule.scope,
    )
    if (Number(how) === 1) return { run: true, token: Number(token) }
    return { run: false, duplicate: Number(how) === 2 }
  }

  async claim(rule: ConcurrencyRule): Promise<ClaimedEntry | null> {
    const got = await this.redis.tsqCcClaim(prefixOf(rule.scope), rule.limit, rule.leaseMs)
    if (!got) return null
    const [token, key, raw] = got
    const entry = JSON.parse(raw) as ParkedEntry
    return { ...entry, key: String(key), token: Number(token) }
  }

  async renew(rule: ConcurrencyRule, tokens: number[]): Promise<number[]> {
    if (tokens.length === 0) return []
    const lost = await this.redis.tsqCcRenew(prefixOf(rule.scope), rule.leaseMs, ...tokens)
    return lost.map(Number)
  }

  async release(rule: ConcurrencyRule, token: number): Promise<boolean> {
    return Number(await this.redis.tsqCcRelease(prefixOf(rule.scope), token)) === 1
  }

  async ack(rule: ConcurrencyRule, token: number): Promise<void> {
    await this.redis.hdel(`${prefixOf(rule.scope)}inflight`, String(token))
  }

  async requeue(rule: ConcurrencyRule, token: number): Promise<void> {
    await this.redis.tsqCcRequeue(prefixOf(rule.scope), token)
  }

  async stats(scope?: string): Promise<ConcurrencyScopeStats[]> {
    const scopes = scope !== undefined ? [scope] : (await this.redis.smembers(SCOPES)).sort()
    return Promise.all(
      scopes.map(async (s) => {
        const [limit, keys] = await this.redis.tsqCcStats(prefixOf(s))
        return {
          scope: s,
          limit: limit === null ? null : Number(limit),
          keys: keys
            .map(([key, backlog, running]) => ({ key: String(key), backlog: Number(backlog), running: Number(running) }))
            .sort((a, b) => a.key.localeCompare(b.key)),
        }
      }),
    )
  }

  async close(): Promise<void> {
    this.redis.disconnect()
  }
}
