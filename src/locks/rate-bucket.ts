// A cluster-wide rate limit as one schedule of slots (GCRA, the cell rate
// algorithm): the store keeps the time the next slot is free (`tat`), and a
// take either runs now, reserves a slot a little ahead (at most the horizon,
// so a `control rate_limit` change is in force within it), or is refused
// with the time until the horizon has room. A refusal that would wait long
// (a slow rate) may instead book a time to come back, on a second schedule
// (`deferTat`, the same spacing), so the messages deferred to then come back
// one slot apart, not all at once. takeSlot is the logic; the Lua below is the
// same logic, run atomically by Redis. Times are µs.

/** How far ahead a take may reserve a slot; also how late a rate change may take effect. */
export const DEFAULT_HORIZON_MS = 500
/** Slots that may be used at once after an idle spell: 1 is no burst, the rate exactly. */
export const DEFAULT_BURST = 1

export interface BucketParams {
  /** µs between two slots; 0 or less: no limit. */
  intervalUs: number
  burst: number
  horizonUs: number
  /** A refusal whose wait is longer than this books a time to come back instead ('deferred'); 0 or absent: never. */
  deferAfterUs?: number
}

/**
 * now: run it. reserved: its slot is `waitUs` away. refused: ask again in
 * `waitUs`. deferred: come back in `waitUs` (its turn on the deferred schedule,
 * when `slotUs` will be within the horizon), and ask again then.
 */
export interface BucketAnswer {
  kind: 'now' | 'reserved' | 'refused' | 'deferred'
  waitUs: number
  /** The slot taken (the store's clock, µs since the epoch); refused: the first slot free; deferred: the one booked. */
  slotUs: number
}

export interface TakeResult {
  answer: BucketAnswer
  /** The tat to store; null: unchanged. */
  tatUs: number | null
  /** The deferred schedule's tat to store; null: unchanged. */
  deferTatUs: number | null
}

/** One take at `nowUs` against the stored `tatUs` and `deferTatUs` (null: none stored). */
export function takeSlot(tatUs: number | null, nowUs: number, p: BucketParams, deferTatUs: number | null = null): TakeResult {
  if (p.intervalUs <= 0) return { answer: { kind: 'now', waitUs: 0, slotUs: nowUs }, tatUs: null, deferTatUs: null }
  const slot = Math.max(tatUs ?? 0, nowUs - (p.burst - 1) * p.intervalUs)
  const wait = slot - nowUs
  if (wait > p.horizonUs) {
    if (p.deferAfterUs && p.deferAfterUs > 0 && wait - p.horizonUs > p.deferAfterUs) {
      const back = Math.max(deferTatUs ?? 0, slot)
      return {
        answer: { kind: 'deferred', waitUs: back - p.horizonUs - nowUs, slotUs: back },
        tatUs: null,
        deferTatUs: back + p.intervalUs,
      }
    }
    return { answer: { kind: 'refused', waitUs: wait - p.horizonUs, slotUs: slot }, tatUs: null, deferTatUs: null }
  }
  return {
    answer: { kind: wait <= 0 ? 'now' : 'reserved', waitUs: Math.max(0, wait), slotUs: slot },
    tatUs: slot + p.intervalUs,
    deferTatUs: null,
  }
}

/** µs between slots for a rate in tasks per second (0: no limit). */
export function intervalUsOf(perSecond: number): number {
  return perSecond > 0 ? Math.max(1, Math.round(1_000_000 / perSecond)) : 0
}

/**
 * takeSlot in Redis. KEYS: the override hash (`control rate_limit`'s
 * interval_us wins over the caller's default), the tat, the deferred tat.
 * ARGV: default interval µs, burst, horizon µs, now µs ('' = Redis's own
 * clock, the one clock every worker shares), defer-after µs (0: never).
 * Returns {kind 0 now | 1 reserved | 2 refused | 3 deferred, wait µs, slot
 * µs}. string.format('%d') keeps µs exact (tostring would not). Keys outlive
 * their time by a minute, so a slow caller never finds one gone early.
 */
export const TAKE_SLOT_LUA = `
local now = tonumber(ARGV[4])
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local interval = tonumber(redis.call('HGET', KEYS[1], 'interval_us') or ARGV[1])
if interval <= 0 then return {0, 0, now} end
local burst = tonumber(ARGV[2])
local horizon = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[2]) or '0')
local slot = math.max(tat, now - (burst - 1) * interval)
local wait = slot - now
if wait > horizon then
  local deferAfter = tonumber(ARGV[5]) or 0
  if deferAfter > 0 and wait - horizon > deferAfter then
    local back = math.max(tonumber(redis.call('GET', KEYS[3]) or '0'), slot)
    local nextBack = back + interval
    redis.call('SET', KEYS[3], string.format('%d', nextBack), 'PX', math.max(1, math.floor((nextBack - now) / 1000)) + 60000)
    return {3, back - horizon - now, back}
  end
  return {2, wait - horizon, slot}
end
local nextTat = slot + interval
redis.call('SET', KEYS[2], string.format('%d', nextTat), 'PX', math.max(1, math.floor((nextTat - now) / 1000)) + 60000)
if wait <= 0 then return {0, 0, slot} end
return {1, wait, slot}
`

const KINDS = ['now', 'reserved', 'refused', 'deferred'] as const

/** The script's reply as an answer. */
export function answerOf(reply: [number, number, number]): BucketAnswer {
  return { kind: KINDS[reply[0]] ?? 'now', waitUs: Number(reply[1]), slotUs: Number(reply[2]) }
}
