// kombu's ack emulation (spec §4.6): a delivered message waits in the `unacked`
// hash (indexed by delivery time in `unacked_index`) until acked; if it stays
// longer than the visibility timeout, any consumer's restore_visible puts it back.
import { createHash, randomUUID } from 'node:crypto'
import { Command, type Redis } from 'ioredis'
import { markRedelivered, asEnvelope, serializeEnvelope } from '../../kombu-envelope.js'
import { UNACKED_MUTEX_EXPIRE, type RedisKeys } from '../keys.js'
import { dumps, loads } from '../../../protocol/index.js'
import { execChecked } from '../batch.js'

// Atomic stand-in for kombu's WATCH unacked / HGET / MULTI: the restore happens only
// if the hash still holds exactly what we read, so two restorers never both push.
// A destination that is not a list is refused before anything changes: Redis keeps
// what a script wrote before an error, and a push failing after the ZREM/HDEL lost
// the message (kombu's MULTI, which runs every command whatever one of them does,
// loses it the same way). It stays unacked, to be restored once the key is a list.
const RESTORE_SCRIPT = `
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current ~= ARGV[2] then return -1 end
for i = 3, #KEYS do
  local kind = redis.call('TYPE', KEYS[i]).ok
  if kind ~= 'list' and kind ~= 'none' then
    return redis.error_reply('WRONGTYPE ' .. KEYS[i] .. ' holds a ' .. kind .. ', not a list: message ' .. ARGV[1] .. ' stays unacked')
  end
end
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

/**
 * A command whose arguments are already flat strings, replied in UTF-8. Set
 * after construction: the constructor would copy them through
 * Array.prototype.flat, a slow builtin for what is already flat. Strings only:
 * the constructor is also where anything else is turned into one.
 */
function flatCommand(name: string, args: string[]): Command {
  const command = new Command(name, [], { replyEncoding: 'utf8' })
  command.args = args
  return command
}

/** A message a claim took: its list, its text, and the tag it was recorded in `unacked` under (none: not recorded). */
export interface ClaimedMessage {
  key: string
  raw: string
  recordedAs: string | undefined
}

export type DestinationLookup = (exchange: string, routingKey: string) => Promise<string[]>

/** Acks waiting to be written: sent on their own at the turn's end, or with a claim sent before then. */
interface PendingRemoval {
  tags: string[]
  sent: Promise<void>
  settle: (error?: unknown) => void
}

export class UnackedStore {
  private unreleasedToken: string | undefined
  private pendingRemoval: PendingRemoval | undefined

  constructor(
    private readonly conn: Redis,
    private readonly lookup: DestinationLookup,
    private readonly keys: RedisKeys,
  ) {}

  /** One MULTI of ZADD + HSET; the stored value is `[envelope, exchange, routing_key]`. */
  async add(tag: string, rawEnvelope: string, exchange: string, routingKey: string): Promise<void> {
    // The envelope text is embedded as-is so a Python restorer reads back exactly what was popped.
    const value = `[${rawEnvelope}, ${dumps(exchange)}, ${dumps(routingKey)}]`
    await this.conn
      .multi()
      .zadd(this.keys.unackedIndex, Date.now() / 1000, tag)
      .hset(this.keys.unacked, tag, value)
      .exec()
  }

  /**
   * Pops the first message of `keys` and, where `record[i]`, writes it to
   * `unacked` in the same atomic step. BRPOP then HSET leaves a gap in which a
   * worker killed with -9 loses the popped message for good (kombu has the same
   * gap); a script closes it. Returns null when every list is empty.
   */
  async claim(keys: readonly string[], record: readonly boolean[], max = 1): Promise<ClaimedMessage[]> {
    // The acks of this turn ride along (removed before the pop, in the same
    // atomic step): one round trip and one script run instead of two writes.
    const acks = this.pendingRemoval
    this.pendingRemoval = undefined
    // EVALSHA's arguments, built flat in one pass: [sha, numkeys, ...KEYS, ...ARGV] (CLAIM_SCRIPT's layout).
    const argv: string[] = [CLAIM_SHA, String(keys.length + 2), this.keys.unacked, this.keys.unackedIndex]
    for (const key of keys) argv.push(key)
    argv.push(String(Date.now() / 1000))
    for (const r of record) argv.push(r ? '1' : '0')
    argv.push(String(Math.max(1, max)))
    if (acks) for (const tag of acks.tags) argv.push(tag)
    let result: string[]
    try {
      result = await this.runClaim(argv)
    } catch (error) {
      acks?.settle(error)
      throw error
    }
    acks?.settle()
    const claimed: ClaimedMessage[] = []
    for (let i = 0; i + 2 < result.length; i += 3)
      claimed.push({ key: result[i]!, raw: result[i + 1]!, recordedAs: result[i + 2] === '' ? undefined : result[i + 2] })
    return claimed
  }

  /**
   * EVALSHA, and EVAL only when Redis answers NOSCRIPT (a new or flushed
   * server): nothing ran then, so sending it again cannot claim twice.
   * Not ioredis's defineCommand: its wrapper (a Command subclass with a
   * closure per send, a catch and a callback adapter on every reply, and
   * the constructor's Array.prototype.flat over the arguments) cost the
   * claim path measurable CPU per task (bench/README.md#tricks).
   */
  private async runClaim(argv: string[]): Promise<string[]> {
    try {
      return ((await this.conn.sendCommand(flatCommand('evalsha', argv))) as string[] | null) ?? []
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
      argv[0] = CLAIM_SCRIPT
      return ((await this.conn.sendCommand(flatCommand('eval', argv))) as string[] | null) ?? []
    }
  }

  /** Takes the message a BLMOVE put in `staging` and records it, in one step. */
  async claimStaged(staging: string, record: boolean): Promise<{ raw: string; recordedAs: string | undefined } | null> {
    const [claimed] = await this.claim([staging], [record])
    return claimed ? { raw: claimed.raw, recordedAs: claimed.recordedAs } : null
  }

  /** Staging lists of dead consumer loops: their messages go back to the list they came from. */
  async recoverStaged(): Promise<number> {
    let cursor = '0'
    let recovered = 0
    do {
      const [next, keys] = await this.conn.scan(cursor, 'MATCH', this.keys.stagingPattern, 'COUNT', 200)
      cursor = next
      for (const key of keys) {
        const parsed = this.keys.parseStagingKey(key)
        if (!parsed) continue
        if (await this.conn.exists(this.keys.stagingOwner(parsed[0]))) continue
        // LMOVE is atomic: a message is always in exactly one of the two lists.
        while ((await this.conn.lmove(key, parsed[1], 'RIGHT', 'RIGHT')) !== null) recovered += 1
      }
    } while (cursor !== '0')
    return recovered
  }

  /** Each tag's `unacked_index` score, null where it is no longer unacked. */
  async scores(tags: readonly string[]): Promise<Array<number | null>> {
    const batch = this.conn.pipeline()
    for (const tag of tags) batch.zscore(this.keys.unackedIndex, tag)
    const replies = (await batch.exec()) ?? []
    return replies.map(([error, score]) => (error || score === null || score === undefined ? null : Number(score)))
  }

  /** Moves a held message's index score forward (ZADD XX: only while it is still unacked). */
  async defer(tag: string, untilUnixSeconds: number): Promise<void> {
    await this.conn.zadd(this.keys.unackedIndex, 'XX', untilUnixSeconds, tag)
  }

  /**
   * Acks made in one turn of the event loop go to Redis together, one HDEL and
   * one ZREM over all their tags: a busy worker settles many per turn. Not a
   * MULTI: under maxmemory Redis refuses every command queued in one, so acks
   * failed and their tasks ran again; HDEL and ZREM alone only free memory and
   * are allowed. HDEL first: a restorer finding the tag in the index without
   * its message drops it (as kombu's restore does), while a ZREM that landed
   * without its HDEL would leave the message in the hash for good.
   */
  remove(tag: string): Promise<void> {
    if (!this.pendingRemoval) {
      let settle!: (error?: unknown) => void
      const sent = new Promise<void>((resolve, reject) => {
        settle = (error) => (error === undefined ? resolve() : reject(error))
      })
      const pending: PendingRemoval = { tags: [], sent, settle }
      this.pendingRemoval = pending
      setImmediate(() => {
        // A claim sent during the turn has taken these acks with it.
        if (this.pendingRemoval !== pending) return
        this.pendingRemoval = undefined
        execChecked(
          this.conn
            .pipeline()
            .hdel(this.keys.unacked, ...pending.tags)
            .zrem(this.keys.unackedIndex, ...pending.tags),
        ).then(
          () => pending.settle(),
          (error: unknown) => pending.settle(error),
        )
      })
    }
    this.pendingRemoval.tags.push(tag)
    return this.pendingRemoval.sent
  }

  /**
   * kombu `restore_by_tag`: mark redelivered and push to the base list of every
   * queue the original (exchange, routing key) reaches: RPUSH (consumed next), or
   * LPUSH (back of the queue) for reject(requeue=True). Returns false if gone.
   */
  async restore(tag: string, { leftmost }: { leftmost: boolean }): Promise<boolean> {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const stored = await this.conn.hget(this.keys.unacked, tag)
      if (stored === null) {
        await this.conn.zrem(this.keys.unackedIndex, tag)
        return false
      }
      let destinations: string[]
      let payload = ''
      try {
        const parsed = loads(stored)
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
        this.keys.unacked,
        this.keys.unackedIndex,
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
    // A release that failed (the connection dropped mid-pass) is retried first:
    // otherwise the lock would block every restore, ours and other workers', for 300 s.
    if (this.unreleasedToken) {
      await this.conn.eval(RELEASE_SCRIPT, 1, this.keys.unackedMutex, this.unreleasedToken)
      this.unreleasedToken = undefined
    }
    const token = randomUUID().replace(/-/g, '')
    const locked = await this.conn.set(this.keys.unackedMutex, token, 'PX', UNACKED_MUTEX_EXPIRE * 1000, 'NX')
    if (locked !== 'OK') return -1
    try {
      await this.recoverStaged()
      const ceil = Date.now() / 1000 - visibilityTimeout
      const args: Array<string | number> = [this.keys.unackedIndex, ceil, 0, 'WITHSCORES']
      if (limit) args.push('LIMIT', 0, limit)
      const found = (await this.conn.call('ZREVRANGEBYSCORE', ...args)) as string[]
      let restored = 0
      let failure: unknown
      for (let i = 0; i < found.length; i += 2) {
        // One message Redis refuses to restore (its queue's key holds another type) holds back none of the others.
        try {
          if (await this.restore(found[i]!, { leftmost: false })) restored += 1
        } catch (error) {
          failure ??= error
        }
      }
      if (failure !== undefined) throw failure
      return restored
    } finally {
      await this.conn.eval(RELEASE_SCRIPT, 1, this.keys.unackedMutex, token).catch(() => {
        this.unreleasedToken = token
      })
    }
  }
}

// KEYS: unacked, unacked_index, then the lists in BRPOP order. ARGV: now, then
// '1'/'0' per list (record as unacked or not), the most to take, then the tags
// of acked messages to remove first (kombu's ack: HDEL unacked, ZREM index).
// The stored value is kombu's `[envelope, exchange, routing_key]`, with the
// envelope kept byte for byte. Each message comes back as its list, its text
// and the tag it was recorded under ('' when it was not), which the caller
// checks against the tag its own reading of the envelope acks by.
// No `#!lua flags=` line: unflagged, Redis (6 and 7) lets a script past
// maxmemory once it has written, and this one's first write is a ZREM or an
// RPOP, so acks riding a claim land under OOM; flags without allow-oom would
// refuse it whole, and Redis 6 cannot parse the line.
const CLAIM_SCRIPT = `
-- Where the quoted key ends if it occurs exactly once in raw[from..to]; nil
-- when it is not there, false when it is there more than once.
local function once(raw, key, from, to)
  local s, e = string.find(raw, key, from, true)
  if not s or e > to then return nil end
  local again = string.find(raw, key, e + 1, true)
  if again and again <= to then return false end
  return e
end
-- The value after the key ending at e, if it is a whole string ending by to.
local function string_after(raw, e, to)
  local _, ve, value = string.find(raw, '^%s*:%s*"([^"]*)"', e + 1)
  if not ve or ve > to then return nil end
  return value
end
-- The string value of the quoted key in raw[from..to]: '' when the key is not
-- there, nil when it is there twice or its value is not a whole string.
local function optional_string(raw, key, from, to)
  local e = once(raw, key, from, to)
  if e == nil then return '' end
  if not e then return nil end
  return string_after(raw, e, to)
end
-- The tag, exchange and routing key (as JSON) of an envelope, read off its
-- text, or nil wherever the text leaves any doubt, for cjson to decode then.
-- Redis's time per message is near the worker's (~20 us each for a noop task),
-- so decoding whole envelopes held the drain back: claims of four took 57-62 us
-- of Redis's time decoded, 48-50 read off the text (commandstats). Read only
-- when "properties"
-- occurs once and its object holds no backslash (no escapes to undo: a string
-- there is its bytes between two quotes, and no quote inside one can be taken
-- for a key's), exactly one object within it (delivery_info's: a brace inside
-- a string counts too, and sends the text to cjson), "delivery_tag" once with
-- a string value, and in delivery_info "exchange" and "routing_key" at most
-- once each with whole string values (absent reads as '', as decoded). A
-- closing brace inside a string ends %b's object early: what is then missing
-- or cut short sends the text to cjson too. ("properties" only as a header's
-- key gives an envelope the worker cannot read: it drops the record.)
local function plain_fields(raw)
  local p = once(raw, '"properties"', 1, #raw)
  if not p then return nil end
  local ps, pe = string.find(raw, '^%s*:%s*%b{}', p + 1)
  if not ps then return nil end
  local bs = string.find(raw, '\\\\', p, true)
  if bs and bs <= pe then return nil end
  local opens, at = 0, p
  while true do
    local b = string.find(raw, '{', at, true)
    if not b or b > pe then break end
    opens = opens + 1
    at = b + 1
  end
  if opens ~= 2 then return nil end
  local te = once(raw, '"delivery_tag"', p, pe)
  local ie = once(raw, '"delivery_info"', p, pe)
  if not te or not ie then return nil end
  local tag = string_after(raw, te, pe)
  if not tag then return nil end
  local is, iend = string.find(raw, '^%s*:%s*%b{}', ie + 1)
  if not is or iend > pe then return nil end
  local ex = optional_string(raw, '"exchange"', ie, iend)
  local rk = optional_string(raw, '"routing_key"', ie, iend)
  if not ex or not rk then return nil end
  return tag, '"' .. ex .. '"', '"' .. rk .. '"'
end

local function decoded_fields(raw)
  local ok, env = pcall(cjson.decode, raw)
  if not (ok and type(env) == 'table' and type(env.properties) == 'table' and env.properties.delivery_tag ~= nil) then return nil end
  local info = env.properties.delivery_info
  if type(info) ~= 'table' then info = {} end
  local ex = info.exchange
  local rk = info.routing_key
  if type(ex) ~= 'string' then ex = '' end
  if type(rk) ~= 'string' then rk = '' end
  return tostring(env.properties.delivery_tag), cjson.encode(ex), cjson.encode(rk)
end

local first = #KEYS + 1
for i = first, #ARGV, 1000 do
  local last = math.min(i + 999, #ARGV)
  redis.call('ZREM', KEYS[2], unpack(ARGV, i, last))
  redis.call('HDEL', KEYS[1], unpack(ARGV, i, last))
end
local claimed = {}
-- Recorded with one ZADD and one HSET for the whole claim, and popped with
-- RPOP's count (Redis 6.2, as BLMOVE): three calls a claim, not three a
-- message (no change in the script's time that commandstats could show). The
-- lists do not change while the script runs, so emptying one before the next
-- takes what popping one at a time from the first non-empty list would.
local scores = {}
local records = {}
-- Redis keeps what a script wrote before an error, so a call that fails after
-- a pop (a later list, or the unacked keys, holding another type) must not end
-- the script: what was popped (claimed, in pop order) goes back to the tails it
-- came from, last popped first, and the claim fails with the error, having
-- taken nothing.
local function undo(err)
  for n = #claimed - 2, 1, -3 do redis.call('RPUSH', claimed[n], claimed[n + 1]) end
  return redis.error_reply(err)
end
local left = tonumber(ARGV[#KEYS])
for i = 3, #KEYS do
  if left <= 0 then break end
  local popped = redis.pcall('RPOP', KEYS[i], left)
  if type(popped) == 'table' and popped.err then return undo(popped.err) end
  if popped then
    left = left - #popped
    for _, raw in ipairs(popped) do
      local recorded = ''
      if ARGV[i - 1] == '1' then
        local tag, ex, rk = plain_fields(raw)
        if not tag then tag, ex, rk = decoded_fields(raw) end
        if tag then
          scores[#scores + 1] = ARGV[1]
          scores[#scores + 1] = tag
          records[#records + 1] = tag
          records[#records + 1] = '[' .. raw .. ', ' .. ex .. ', ' .. rk .. ']'
          recorded = tag
        end
      end
      local n = #claimed
      claimed[n + 1] = KEYS[i]
      claimed[n + 2] = raw
      claimed[n + 3] = recorded
    end
  end
end
if #scores > 0 then
  local added = redis.pcall('ZADD', KEYS[2], unpack(scores))
  if type(added) == 'table' and added.err then return undo(added.err) end
  local set = redis.pcall('HSET', KEYS[1], unpack(records))
  if type(set) == 'table' and set.err then
    for j = 2, #scores, 2 do redis.call('ZREM', KEYS[2], scores[j]) end
    return undo(set.err)
  end
end
if #claimed == 0 then return false end
return claimed
`

const CLAIM_SHA = createHash('sha1').update(CLAIM_SCRIPT).digest('hex')
