// The Redis store in RedBeat's key layout (spec §8.6): `<prefix><name>` hashes
// with `definition` and `meta`, the `<prefix>:schedule` zset of integer due
// seconds, the `<prefix>:statics` set. Reservation is one Lua script per tick
// (per 500 runs), so the lease (fencing) check and every run's run-count check
// and update are one atomic step.
import type { Redis } from 'ioredis'
// DEBUG=ioredis:* lines with their passwords masked.
import '../transport/redis/index.js'
import { comparePyStr, TsqError } from '../protocol/index.js'
import {
  explainRedisConnectFailure,
  livenessClientOptions,
  maskUrl,
  redisUrlClientOptions,
  watchLiveness,
  type RedisLiveness,
  type SentinelSettings,
  type SslSettings,
} from '../transport/index.js'
import { decodeDefinition, decodeMeta, dueAtOf, encodeDefinition, encodeMeta } from './entry.js'
import type { Entry, EntryDefinition, EntryMeta } from './entry.js'
import { reservedMeta } from './store.js'
import type { BeatStore, DueBatch, Fence, ReleaseRun, ReserveOutcome, ReserveRequest, ReserveRun } from './store.js'

export const DEFAULT_KEY_PREFIX = 'redbeat:'

// Reserves every run of a tick in one call. KEYS: the schedule zset, the lock
// key, then one entry hash per run. ARGV[1]: the fencing token ('' for none),
// then per run its expected count, the meta to write and the next due score.
// The fence is checked once, before anything is written: the script runs
// atomically, so the lease cannot change hands between that check and the
// last write. Each run then gets the same check-and-set as one at a time.
const RESERVE_ALL_LUA = `
if ARGV[1] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[1] then return 'fenced' end
local out = {}
for i = 3, #KEYS do
  local key = KEYS[i]
  local a = (i - 3) * 3 + 2
  local outcome = 'ok'
  local def = redis.call('HGET', key, 'definition')
  if not def then
    outcome = 'gone'
  else
    local ok, d = pcall(cjson.decode, def)
    if ok and type(d) == 'table' and d['enabled'] == false then outcome = 'gone' end
  end
  if outcome == 'ok' then
    local count = 0
    local meta = redis.call('HGET', key, 'meta')
    if meta then
      local okm, m = pcall(cjson.decode, meta)
      if okm and type(m) == 'table' and type(m['total_run_count']) == 'number' then count = m['total_run_count'] end
    end
    if count ~= tonumber(ARGV[a]) then outcome = 'stale' end
  end
  if outcome == 'ok' then
    redis.call('HSET', key, 'meta', ARGV[a + 1])
    redis.call('ZADD', KEYS[1], ARGV[a + 2], key)
  end
  out[#out + 1] = outcome
end
return out
`

// Gives back reservations that were never sent. KEYS: the schedule zset, then
// one entry hash per run. ARGV per run: the meta its reservation wrote, the
// meta from before, the score to restore. Only an entry whose meta is still
// exactly what the reservation wrote is touched, so nothing another beat (or
// a later run) recorded is undone.
const RELEASE_LUA = `
local n = 0
for i = 2, #KEYS do
  local a = (i - 2) * 3 + 1
  if redis.call('HGET', KEYS[i], 'meta') == ARGV[a] then
    redis.call('HSET', KEYS[i], 'meta', ARGV[a + 1])
    redis.call('ZADD', KEYS[1], ARGV[a + 2], KEYS[i])
    n = n + 1
  end
end
return n
`

/** Runs per reservation script: bounds how long one call holds Redis. */
const RESERVE_CHUNK = 500

type EvalCommand = (...a: Array<string | number>) => Promise<unknown>

/** RedBeat's score: whole UTC seconds (calendar.timegm). */
export function score(ms: number): number {
  return Math.floor(ms / 1000)
}

export interface RedisStoreOptions {
  url: string
  /** RedBeat's redbeat_redis_use_ssl, else broker_use_ssl; the URL's ssl_* parameters win. */
  ssl?: SslSettings | boolean | null
  /** For a sentinel:// URL: the broker's master_name and sentinel_kwargs (RedBeat shares the broker's Redis). */
  sentinel?: SentinelSettings
  /** broker_transport_options' socket_timeout, socket_connect_timeout, socket_keepalive, health_check_interval. */
  liveness?: RedisLiveness
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
    this.location = `${maskUrl(options.url)} (prefix ${this.prefix})`
    // numberOfKeys varies with the batch: it is passed first on each call.
    this.redis.defineCommand('tsqBeatReserveAll', { lua: RESERVE_ALL_LUA })
    this.redis.defineCommand('tsqBeatRelease', { lua: RELEASE_LUA })
  }

  static async open(options: RedisStoreOptions): Promise<RedisStore> {
    // The bundled CLI hands CommonJS ioredis over as its default export; plain Node names it.
    const ioredis = await import('ioredis')
    const Redis = ioredis.Redis ?? (ioredis as unknown as { default: typeof ioredis.Redis }).default
    const clientOptions = redisUrlClientOptions(options.url, options.ssl, {
      settings: options.sentinel,
      optionsName: 'broker_transport_options',
    })
    const connectTimeout = options.liveness?.socketConnectTimeout ? Math.round(options.liveness.socketConnectTimeout * 1000) : 5000
    const redis = new Redis({
      ...clientOptions,
      ...livenessClientOptions(options.liveness),
      connectTimeout,
      lazyConnect: true,
      maxRetriesPerRequest: 2,
      enableOfflineQueue: true,
      connectionName: 'tsq-beat',
    })
    // A silent path to the store (and the lease on it) is noticed by a PING every health_check_interval (25 s by default).
    watchLiveness(redis, options.liveness, connectTimeout)
    let lastError: Error | undefined
    let lastSentinelError: Error | undefined
    redis.on('error', (error: Error) => {
      lastError = error
    })
    redis.on('sentinelError', (error: Error) => {
      lastSentinelError = error
    })
    try {
      await redis.connect()
    } catch (error) {
      redis.disconnect()
      const cause = lastError ?? (error as Error)
      throw new TsqError(
        'BROKER_UNREACHABLE',
        `cannot reach the Redis schedule store at ${maskUrl(options.url)}: ${await explainRedisConnectFailure(cause, clientOptions, lastSentinelError)}`,
      )
    }
    return new RedisStore(redis, options)
  }

  keyOf(name: string): string {
    return `${this.prefix}${name}`
  }

  async due(now: number): Promise<DueBatch> {
    // One round trip for both, as RedBeat's MULTI (spec §8.6 tick step 2).
    const [[keysErr, keysOut], [peekErr, peekOut]] = (await this.redis
      .pipeline()
      .zrangebyscore(this.scheduleKey, 0, score(now), 'LIMIT', 0, this.batch)
      .zrangebyscore(this.scheduleKey, `(${score(now)}`, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
      .exec()) as Array<[Error | null, unknown]> as [[Error | null, unknown], [Error | null, unknown]]
    if (keysErr || peekErr) throw (keysErr ?? peekErr)!
    const keys = keysOut as string[]
    const peek = peekOut as string[]
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

  private command(name: 'tsqBeatReserveAll' | 'tsqBeatRelease'): EvalCommand {
    const run = (this.redis as unknown as Record<string, EvalCommand>)[name]!
    return (...a) => run.call(this.redis, ...a)
  }

  async reserve(r: ReserveRequest): Promise<ReserveOutcome> {
    const { fence, ...run } = r
    const [outcome] = await this.reserveAll([run], fence)
    return outcome!
  }

  async reserveAll(runs: ReserveRun[], fence?: Fence): Promise<ReserveOutcome[]> {
    const outcomes: ReserveOutcome[] = []
    const reserve = this.command('tsqBeatReserveAll')
    for (let i = 0; i < runs.length; i += RESERVE_CHUNK) {
      const chunk = runs.slice(i, i + RESERVE_CHUNK)
      const keys = [this.scheduleKey, fence?.key ?? this.lockKey, ...chunk.map((r) => this.keyOf(r.name))]
      const argv = [fence?.token ?? '', ...chunk.flatMap((r) => [r.expectedCount, encodeMeta(reservedMeta(r)), score(r.nextDueAt)])]
      const out = await reserve(keys.length, ...keys, ...argv)
      if (out === 'fenced') {
        // Later chunks would be refused too; earlier ones (if any) were ours.
        return [...outcomes, ...runs.slice(i).map((): ReserveOutcome => 'fenced')]
      }
      outcomes.push(...(out as ReserveOutcome[]))
    }
    return outcomes
  }

  async release(runs: ReleaseRun[]): Promise<number> {
    let n = 0
    const release = this.command('tsqBeatRelease')
    for (let i = 0; i < runs.length; i += RESERVE_CHUNK) {
      const chunk = runs.slice(i, i + RESERVE_CHUNK)
      const keys = [this.scheduleKey, ...chunk.map((r) => this.keyOf(r.name))]
      const argv = chunk.flatMap((r) => [encodeMeta(reservedMeta(r)), encodeMeta(r.previous), score(r.ranAt)])
      n += Number(await release(keys.length, ...keys, ...argv))
    }
    return n
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

  async save(definition: EntryDefinition, options: { meta?: EntryMeta; now?: number } = {}): Promise<void> {
    const now = options.now ?? Date.now()
    const key = this.keyOf(definition.name)
    const existing = options.meta ?? decodeMeta(await this.redis.hget(key, 'meta'))
    const known = options.meta !== undefined || (await this.redis.hexists(key, 'meta')) === 1
    const meta: EntryMeta = known ? existing : { lastRunAt: now, totalRunCount: 0 }
    const multi = this.redis.multi().hset(key, 'definition', encodeDefinition(definition))
    if (options.meta) multi.hset(key, 'meta', encodeMeta(meta))
    else multi.hsetnx(key, 'meta', JSON.stringify({ last_run_at: JSON.parse(encodeMeta(meta)).last_run_at }))
    multi.zadd(this.scheduleKey, score(dueAtOf({ definition, meta }, this.tz, now)), key)
    multi.publish(this.changedChannel, definition.name)
    await multi.exec()
  }

  async remove(name: string): Promise<boolean> {
    const key = this.keyOf(name)
    const res = await this.redis
      .multi()
      .zrem(this.scheduleKey, key)
      .del(key)
      .srem(this.staticsKey, name)
      .publish(this.changedChannel, name)
      .exec()
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
