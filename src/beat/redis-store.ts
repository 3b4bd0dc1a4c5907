// The Redis store in RedBeat's key layout (spec §8.6): `<prefix><name>` hashes
// with `definition` and `meta`, the `<prefix>:schedule` zset of integer due
// seconds, the `<prefix>:statics` set. Reservation is one Lua script, so the
// run-count check, the lease (fencing) check and the update are atomic.
import type { Redis } from 'ioredis'
import { comparePyStr } from '../protocol/index.js'
import { decodeDefinition, decodeMeta, encodeDefinition, encodeMeta, scheduleOf, type Entry, type EntryDefinition, type EntryMeta } from './entry.js'
import type { BeatStore, DueBatch, ReserveOutcome, ReserveRequest } from './store.js'

export const DEFAULT_KEY_PREFIX = 'redbeat:'

const RESERVE_LUA = `
if ARGV[4] ~= '' and redis.call('GET', KEYS[3]) ~= ARGV[4] then return 'fenced' end
local def = redis.call('HGET', KEYS[1], 'definition')
if not def then return 'gone' end
local ok, d = pcall(cjson.decode, def)
if ok and d['enabled'] == false then return 'gone' end
local count = 0
local meta = redis.call('HGET', KEYS[1], 'meta')
if meta then
  local okm, m = pcall(cjson.decode, meta)
  if okm and type(m['total_run_count']) == 'number' then count = m['total_run_count'] end
end
if count ~= tonumber(ARGV[1]) then return 'stale' end
redis.call('HSET', KEYS[1], 'meta', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], KEYS[1])
return 'ok'
`

/** RedBeat's score: whole UTC seconds (calendar.timegm). */
export function score(ms: number): number {
  return Math.floor(ms / 1000)
}

export interface RedisStoreOptions {
  url: string
  keyPrefix?: string
  tz?: string
  /** Keys fetched per round trip when many entries are due at once. */
  batch?: number
}

export class RedisStore implements BeatStore {
  readonly kind = 'redis' as const
  readonly location: string
  readonly prefix: string
  readonly scheduleKey: string
  readonly staticsKey: string
  readonly lockKey: string
  readonly changedChannel: string
  private readonly tz: string
  private readonly batch: number

  private constructor(
    readonly redis: Redis,
    options: RedisStoreOptions,
  ) {
    this.prefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX
    this.scheduleKey = `${this.prefix}:schedule`
    this.staticsKey = `${this.prefix}:statics`
    this.lockKey = `${this.prefix}:lock`
    this.changedChannel = `${this.prefix}:changed`
    this.tz = options.tz ?? 'UTC'
    this.batch = options.batch ?? 1000
    this.location = `${options.url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:**@')} (prefix ${this.prefix})`
    this.redis.defineCommand('tsqBeatReserve', { numberOfKeys: 3, lua: RESERVE_LUA })
  }

  static async open(options: RedisStoreOptions): Promise<RedisStore> {
    // The bundled CLI hands CommonJS ioredis over as its default export; plain Node names it.
    const ioredis = await import('ioredis')
    const Redis = ioredis.Redis ?? (ioredis as unknown as { default: typeof ioredis.Redis }).default
    const redis = new Redis(options.url, { lazyConnect: true, maxRetriesPerRequest: 2, enableOfflineQueue: true, connectionName: 'tsq-beat' })
    redis.on('error', () => undefined)
    try {
      await redis.connect()
    } catch (error) {
      redis.disconnect()
      throw Object.assign(new Error(`cannot reach the Redis schedule store at ${options.url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:**@')}: ${(error as Error).message}`), { code: 'BROKER_UNREACHABLE' })
    }
    return new RedisStore(redis, options)
  }

  keyOf(name: string): string {
    return `${this.prefix}${name}`
  }


  async due(now: number): Promise<DueBatch> {
    const keys = await this.redis.zrangebyscore(this.scheduleKey, 0, score(now), 'LIMIT', 0, this.batch)
    const peek = await this.redis.zrangebyscore(this.scheduleKey, `(${score(now)}`, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    const entries = await this.load(keys)
    const nextDueAt = keys.length >= this.batch ? now : peek.length === 2 ? Number(peek[1]) * 1000 : null
    return { entries, nextDueAt }
  }

  private async load(keys: string[]): Promise<Entry[]> {
    if (keys.length === 0) return []
    const pipe = this.redis.pipeline()
    for (const key of keys) pipe.hmget(key, 'definition', 'meta')
    const results = (await pipe.exec()) ?? []
    const entries: Entry[] = []
    const missing: string[] = []
    results.forEach(([err, value], i) => {
      const [definition, meta] = (value as [string | null, string | null] | null) ?? [null, null]
      if (err || !definition) {
        missing.push(keys[i]!)
        return
      }
      try {
        entries.push({ definition: decodeDefinition(definition), meta: decodeMeta(meta) })
      } catch {
        missing.push(keys[i]!)
      }
    })
    // RedBeat drops index members whose hash is gone.
    if (missing.length) await this.redis.zrem(this.scheduleKey, ...missing)
    return entries
  }

  async reserve(r: ReserveRequest): Promise<ReserveOutcome> {
    const meta = encodeMeta({ lastRunAt: r.ranAt, totalRunCount: r.expectedCount + 1 })
    const run = (this.redis as unknown as { tsqBeatReserve: (...a: Array<string | number>) => Promise<string> }).tsqBeatReserve
    const out = await run.call(this.redis, this.keyOf(r.name), this.scheduleKey, r.fence?.key ?? this.lockKey, r.expectedCount, meta, score(r.nextDueAt), r.fence?.token ?? '')
    return out as ReserveOutcome
  }

  async reschedule(name: string, dueAt: number): Promise<void> {
    await this.redis.zadd(this.scheduleKey, score(dueAt), this.keyOf(name))
  }

  async get(name: string): Promise<Entry | null> {
    const [entry] = await this.load([this.keyOf(name)])
    return entry ?? null
  }

  async list(): Promise<Entry[]> {
    const keys = await this.redis.zrange(this.scheduleKey, 0, -1)
    const entries: Entry[] = []
    for (let i = 0; i < keys.length; i += this.batch) entries.push(...(await this.load(keys.slice(i, i + this.batch))))
    return entries.sort((a, b) => comparePyStr(a.definition.name, b.definition.name))
  }

  /** The due time the index should hold for this definition and history. */
  dueAt(definition: EntryDefinition, meta: EntryMeta, now: number): number {
    if (meta.lastRunAt === null) return now
    return scheduleOf(definition.schedule, this.tz).dueAt(meta.lastRunAt)
  }

  async save(definition: EntryDefinition, options: { meta?: EntryMeta; now?: number } = {}): Promise<void> {
    const now = options.now ?? Date.now()
    const key = this.keyOf(definition.name)
    const existing = options.meta ?? decodeMeta(await this.redis.hget(key, 'meta'))
    const known = options.meta !== undefined || (await this.redis.hexists(key, 'meta')) === 1
    const meta: EntryMeta = known ? existing : { lastRunAt: now, totalRunCount: 0 }
    const multi = this.redis.multi().hset(key, 'definition', encodeDefinition(definition))
    if (options.meta) multi.hset(key, 'meta', encodeMeta(meta))
    else multi.hsetnx(key, 'meta', JSON.stringify({ last_run_at: JSON.parse(encodeMeta(meta)).last_run_at }))
    multi.zadd(this.scheduleKey, score(this.dueAt(definition, meta, now)), key)
    multi.publish(this.changedChannel, definition.name)
    await multi.exec()
  }

  async remove(name: string): Promise<boolean> {
    const key = this.keyOf(name)
    const res = await this.redis.multi().zrem(this.scheduleKey, key).del(key).srem(this.staticsKey, name).publish(this.changedChannel, name).exec()
    return Number(res?.[1]?.[1] ?? 0) > 0
  }

  async syncStatics(definitions: EntryDefinition[], now: number): Promise<void> {
    const names = new Set(definitions.map((d) => d.name))
    const previous = await this.redis.smembers(this.staticsKey)
    for (const old of previous) if (!names.has(old)) await this.remove(old)
    for (const d of definitions) {
      const current = await this.redis.hget(this.keyOf(d.name), 'definition')
      if (current !== encodeDefinition(d)) await this.save(d, { now })
    }
    if (names.size) await this.redis.sadd(this.staticsKey, ...names)
  }

  async watch(listener: () => void): Promise<() => Promise<void>> {
    const sub = this.redis.duplicate({ connectionName: 'tsq-beat-watch' })
    sub.on('error', () => undefined)
    sub.on('message', () => listener())
    await sub.subscribe(this.changedChannel)
    return async () => {
      sub.disconnect()
    }
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect())
  }
}
