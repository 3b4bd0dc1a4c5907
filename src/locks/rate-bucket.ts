// A cluster-wide rate limit as one schedule of slots (GCRA, the cell rate
// algorithm): the store keeps the time the next slot is free (`tat`), and a
// take either runs now, reserves a slot a little ahead (at most the horizon,
// so a `control rate_limit` change is in force within it), or is refused
// with the time until the horizon has room. takeSlot is the logic; the Lua
// below is the same logic, run atomically by Redis. Times are µs.

/** How far ahead a take may reserve a slot; also how late a rate change may take effect. */
export const DEFAULT_HORIZON_MS = 500
/** Slots that may be used at once after an idle spell: 1 is no burst, the rate exactly. */
export const DEFAULT_BURST = 1

export interface BucketParams {
  /** µs between two slots; 0 or less: no limit. */
  intervalUs: number
  burst: number
  horizonUs: number
}

/** now: run it. reserved: its slot is `waitUs` away (held or deferred till then). refused: ask again in `waitUs`. */
export interface BucketAnswer {
  kind: 'now' | 'reserved' | 'refused'
  waitUs: number
  /** The slot taken (the store's clock, µs since the epoch); for refused, the first slot free. */
  slotUs: number
}

/** One take at `nowUs` against the stored `tatUs` (null: none stored): the answer, and the tat to store (null: unchanged). */
export function takeSlot(tatUs: number | null, nowUs: number, p: BucketParams): { answer: BucketAnswer; tatUs: number | null } {
  if (p.intervalUs <= 0) return { answer: { kind: 'now', waitUs: 0, slotUs: nowUs }, tatUs: null }
  const slot = Math.max(tatUs ?? 0, nowUs - (p.burst - 1) * p.intervalUs)
  const wait = slot - nowUs
  if (wait > p.horizonUs) return { answer: { kind: 'refused', waitUs: wait - p.horizonUs, slotUs: slot }, tatUs: null }
  return { answer: { kind: wait <= 0 ? 'now' : 'reserved', waitUs: Math.max(0, wait), slotUs: slot }, tatUs: slot + p.intervalUs }
}

/** µs between slots for a rate in tasks per second (0: no limit). */
export function intervalUsOf(perSecond: number): number {
  return perSecond > 0 ? Math.max(1, Math.round(1_000_000 / perSecond)) : 0
}

/**
 * takeSlot in Redis. KEYS: the override hash (`control rate_limit`'s
 * interval_us wins over the caller's default), the tat. ARGV: default
 * interval µs, burst, horizon µs, now µs ('' = Redis's own clock, the one
 * clock every worker shares). Returns {kind 0 now | 1 reserved | 2 refused,
 * wait µs, slot µs}. string.format('%d') keeps µs exact (tostring would not).
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
if wait > horizon then return {2, wait - horizon, slot} end
local nextTat = slot + interval
redis.call('SET', KEYS[2], string.format('%d', nextTat), 'PX', math.floor((nextTat - now) / 1000) + 1000)
if wait <= 0 then return {0, 0, slot} end
return {1, wait, slot}
`

const KINDS = ['now', 'reserved', 'refused'] as const

/** The script's reply as an answer. */
export function answerOf(reply: [number, number, number]): BucketAnswer {
  return { kind: KINDS[reply[0]] ?? 'now', waitUs: Number(reply[1]), slotUs: Number(reply[2]) }
}
