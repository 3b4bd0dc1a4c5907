// Parking lots on Redis (tsq-only keys; Python never reads them), the store
// under the virtual layer's parking (virtual/parking.ts): one sorted set per
// lot, `_tsq.parked.<lot>`, scored by the message's time in ms, each member a
// JSON object {i: id, q: queue, l: the queue's list key for its priority, e:
// the kombu envelope it goes back as}. A member moves into its list in one Lua
// script (LPUSH then ZREM), so a process that dies mid-move loses nothing and
// moves nothing twice.
import type { Redis } from 'ioredis'
import type { ParkedEntry, ParkingStore, ParkTrim } from '../virtual/parking.js'
import type { RedisKeys } from './keys.js'

export const PARKED_PREFIX = '_tsq.parked.'

export function parkedKey(lot: string): string {
  return `${PARKED_PREFIX}${lot}`
}

/** Adds a member, then trims the lot by age (score) and length, oldest first. */
const PARK_SCRIPT = `
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
if ARGV[4] ~= '' then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[4]) end
local max = tonumber(ARGV[3])
if max >= 0 then
  local n = redis.call('ZCARD', KEYS[1])
  if n > max then redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - max - 1) end
end
return 1
`

/**
 * Moves every due member (score <= now, at most ARGV[2] per lot) into its
 * list, then reports how many moved and the lowest score left, as Redis
 * wrote it (a string, so ms survive exactly).
 */
const RELEASE_SCRIPT = `
local moved = 0
local nextAt = nil
local nextText = ''
for _, key in ipairs(KEYS) do
  local due = redis.call('ZRANGEBYSCORE', key, '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
  for _, member in ipairs(due) do
    local ok, m = pcall(cjson.decode, member)
    if ok and type(m) == 'table' and type(m.l) == 'string' and type(m.e) == 'string' then
      redis.call('LPUSH', m.l, m.e)
    end
    redis.call('ZREM', key, member)
    moved = moved + 1
  end
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if first[2] then
    local s = tonumber(first[2])
    if nextAt == nil or s < nextAt then
      nextAt = s
      nextText = first[2]
    end
  end
end
return {moved, nextText}
`

/** Most members one release moves per lot; the rest go in the next pass, at once. */
const RELEASE_BATCH = 500

interface Member {
  i: string
  q: string
  l: string
  e: string
}

type RedisWithScripts = Redis & {
  tsqPark?: (numKeys: number, ...keysAndArgs: string[]) => Promise<number>
  tsqRelease?: (numKeys: number, ...keysAndArgs: string[]) => Promise<[number, string]>
}

export class RedisParkingStore implements ParkingStore {
  constructor(
    private readonly conn: () => Promise<Redis>,
    private readonly guard: <T>(where: string, run: () => Promise<T>) => Promise<T>,
    private readonly keys: RedisKeys,
  ) {}

  /** The lot's sorted set, under the global key prefix like every other key. */
  private lotKey(lot: string): string {
    return this.keys.key(parkedKey(lot))
  }

  private async scripts(): Promise<Required<Pick<RedisWithScripts, 'tsqPark' | 'tsqRelease'>>> {
    const conn = (await this.conn()) as RedisWithScripts
    if (!conn.tsqPark) conn.defineCommand('tsqPark', { lua: PARK_SCRIPT })
    if (!conn.tsqRelease) conn.defineCommand('tsqRelease', { lua: RELEASE_SCRIPT })
    return conn as Required<Pick<RedisWithScripts, 'tsqPark' | 'tsqRelease'>>
  }

  async add(lot: string, entry: ParkedEntry, priority: number, trim: ParkTrim): Promise<void> {
    // `i` first: members of one score sort by it (parkedId).
    const member: Member = { i: entry.id, q: entry.queue, l: this.keys.list(entry.queue, this.keys.step(priority)), e: entry.envelope }
    const scripts = await this.scripts()
    await this.guard(`park in ${lot}`, () =>
      scripts.tsqPark(
        1,
        this.lotKey(lot),
        String(Math.round(entry.at)),
        JSON.stringify(member),
        String(trim.maxLength ?? -1),
        trim.minAt !== undefined ? String(trim.minAt) : '',
      ),
    )
  }

  async releaseDue(lots: readonly string[], now: number): Promise<{ moved: number; nextAt: number | null }> {
    const scripts = await this.scripts()
    const [moved, next] = await this.guard('release due parked messages', () =>
      scripts.tsqRelease(lots.length, ...lots.map((lot) => this.lotKey(lot)), String(now), String(RELEASE_BATCH)),
    )
    return { moved: Number(moved), nextAt: next === '' ? null : Number(next) }
  }

  async entries(lot: string, limit?: number): Promise<ParkedEntry[]> {
    const conn = await this.conn()
    const stop = limit !== undefined ? limit - 1 : -1
    const flat = await this.guard(`list ${lot}`, () => conn.zrange(this.lotKey(lot), 0, stop, 'WITHSCORES'))
    const out: ParkedEntry[] = []
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const m = member(flat[i]!)
      if (m) out.push({ id: m.i, queue: m.q, at: Number(flat[i + 1]), envelope: m.e })
    }
    return out
  }

  async remove(lot: string, ids: ReadonlySet<string>): Promise<number> {
    const conn = await this.conn()
    const members = await this.guard(`list ${lot}`, () => conn.zrange(this.lotKey(lot), 0, -1))
    const doomed = members.filter((m) => {
      const id = member(m)?.i
      return id !== undefined && ids.has(id)
    })
    if (doomed.length === 0) return 0
    return this.guard(`drop from ${lot}`, () => conn.zrem(this.lotKey(lot), ...doomed))
  }

  async count(lot: string): Promise<number> {
    const conn = await this.conn()
    return this.guard(`count ${lot}`, () => conn.zcard(this.lotKey(lot)))
  }
}

function member(raw: string): Member | undefined {
  try {
    const m = JSON.parse(raw) as Member
    return m !== null && typeof m === 'object' ? m : undefined
  } catch {
    return undefined
  }
}
