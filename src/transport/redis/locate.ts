// Finding a task's message on Redis without taking it (`tsq why`): a scan of
// a queue's priority lists from the end BRPOP takes from, run in Redis (one
// round trip, no message copied out), then of kombu's `unacked` hash. A raw
// substring test first, then a decode, so most messages cost one find.
import type { Redis } from 'ioredis'
import type { LocateResult } from '../transport.js'
import type { RedisKeys } from './keys.js'

/** Messages one search looks at, at most, over every list: past it a miss is no proof (LocateResult.truncated). */
export const LOCATE_LIMIT = 100_000

/**
 * KEYS: the lists, in the order consumers empty them. ARGV: the id, the limit.
 * Returns {list index (1-based, 0: none), its place from the popping end, the
 * lengths as JSON, messages looked at}.
 */
const LOCATE_SCRIPT = `
local id = ARGV[1]
local limit = tonumber(ARGV[2])
local lens = {}
for k, key in ipairs(KEYS) do lens[k] = redis.call('LLEN', key) end
local scanned = 0
local function isIt(item)
  if not string.find(item, id, 1, true) then return false end
  local ok, m = pcall(cjson.decode, item)
  if not ok or type(m) ~= 'table' then return false end
  if type(m.headers) == 'table' and m.headers.id == id then return true end
  return type(m.properties) == 'table' and m.properties.correlation_id == id
end
for k, key in ipairs(KEYS) do
  local from = 0
  while from < lens[k] and scanned < limit do
    local items = redis.call('LRANGE', key, -(from + 1000), -(from + 1))
    if #items == 0 then break end
    for i = #items, 1, -1 do
      if isIt(items[i]) then return {k, from + (#items - i), cjson.encode(lens), scanned + (#items - i) + 1} end
    end
    from = from + #items
    scanned = scanned + #items
  end
end
return {0, -1, cjson.encode(lens), scanned}
`

/** HSCAN's values: [envelope, exchange, routing_key] as kombu stores them. */
const UNACKED_SCRIPT = `
local id = ARGV[1]
local cursor = '0'
repeat
  local page = redis.call('HSCAN', KEYS[1], cursor, 'COUNT', 1000)
  cursor = page[1]
  local kv = page[2]
  for i = 2, #kv, 2 do
    local v = kv[i]
    if string.find(v, id, 1, true) then
      local ok, m = pcall(cjson.decode, v)
      if ok and type(m) == 'table' and type(m[1]) == 'table' then
        local e = m[1]
        local hit = (type(e.headers) == 'table' and e.headers.id == id)
          or (type(e.properties) == 'table' and e.properties.correlation_id == id)
        if hit then return m[3] or '' end
      end
    end
  end
until cursor == '0'
return false
`

type WithLocate = Redis & {
  tsqLocate?: (numKeys: number, ...keysAndArgs: string[]) => Promise<[number, number, string, number]>
  tsqLocateUnacked?: (numKeys: number, ...keysAndArgs: string[]) => Promise<string | null>
}

function scripts(conn: Redis): Required<Pick<WithLocate, 'tsqLocate' | 'tsqLocateUnacked'>> {
  const c = conn as WithLocate
  if (!c.tsqLocate) c.defineCommand('tsqLocate', { lua: LOCATE_SCRIPT })
  if (!c.tsqLocateUnacked) c.defineCommand('tsqLocateUnacked', { lua: UNACKED_SCRIPT })
  return c as Required<Pick<WithLocate, 'tsqLocate' | 'tsqLocateUnacked'>>
}

export async function locateOnRedis(
  conn: Redis,
  keys: RedisKeys,
  taskId: string,
  queues: readonly string[],
  limit = LOCATE_LIMIT,
): Promise<LocateResult> {
  const s = scripts(conn)
  const depths: Record<string, number> = {}
  let scanned = 0
  let truncated = false
  for (const queue of queues) {
    const lists = keys.lists(queue)
    const [at, offset, lensJson, seen] = await s.tsqLocate(lists.length, ...lists, taskId, String(Math.max(0, limit - scanned)))
    const lens = (JSON.parse(lensJson) as number[]).map(Number)
    const depth = lens.reduce((a, b) => a + b, 0)
    depths[queue] = depth
    scanned += Number(seen)
    if (at > 0) {
      const ahead = lens.slice(0, at - 1).reduce((a, b) => a + b, 0)
      return { found: { where: 'queue', queue, position: ahead + Number(offset), depth }, depths, scanned, truncated }
    }
    if (Number(seen) < depth) truncated = true
  }
  const routingKey = await s.tsqLocateUnacked(1, keys.unacked, taskId)
  if (typeof routingKey === 'string') {
    return { found: { where: 'unacked', queue: routingKey, position: null, depth: depths[routingKey] ?? null }, depths, scanned, truncated }
  }
  return { found: null, depths, scanned, truncated }
}
