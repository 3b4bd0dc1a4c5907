// Leader election over Redis with a fencing token (`--ha lease`). The lease
// sits at RedBeat's lock key, so a Python RedBeat and tsq beats exclude each
// other. Its value is `<uuid>:<fence>`, where fence comes from INCR on
// `<lock>:fence` at each acquisition: strictly increasing, so the store's
// reservation script (which compares the value) refuses any deposed holder.
import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'

const ACQUIRE_LUA = `
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
local fence = redis.call('INCR', KEYS[2])
local token = ARGV[2] .. ':' .. fence
redis.call('SET', KEYS[1], token, 'PX', ARGV[1])
return token
`

// RedBeat's extend: reset the TTL to the full timeout if we still hold it.
const EXTEND_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`

const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`

export type LeaseChange = 'acquired' | 'lost' | null

export class RedisLease {
  private token: string | null = null
  private renewedAt = 0
  private readonly id = randomUUID().replace(/-/g, '')

  constructor(
    private readonly redis: Redis,
    readonly key: string,
    readonly timeoutMs: number,
  ) {}

  get held(): { key: string; token: string } | null {
    // Past the timeout without a renewal, assume another beat may hold it now.
    if (this.token === null || Date.now() - this.renewedAt >= this.timeoutMs) return null
    return { key: this.key, token: this.token }
  }

  get fence(): number | null {
    return this.token === null ? null : Number(this.token.split(':').pop())
  }

  /** Renews a held lease or tries to take a free one; says what changed. */
  async refresh(): Promise<LeaseChange> {
    const had = this.token !== null
    try {
      const change = await this.refreshOnce()
      this.unreachable = null
      return change
    } catch (error) {
      this.unreachable = (error as Error).message
      // Redis unreachable: a lease we cannot renew is one we must stop using.
      if (had && Date.now() - this.renewedAt >= this.timeoutMs) {
        this.token = null
        return 'lost'
      }
      return null
    }
  }

  /** Why the last refresh could not reach Redis; null once one did (beat's /readyz reads it). */
  unreachable: string | null = null

  private async refreshOnce(): Promise<LeaseChange> {
    if (this.token !== null) {
      const ok = Number(await this.redis.eval(EXTEND_LUA, 1, this.key, this.token, this.timeoutMs))
      if (ok === 1) {
        this.renewedAt = Date.now()
        return null
      }
      this.token = null
      return 'lost'
    }
    const started = Date.now()
    const token = (await this.redis.eval(ACQUIRE_LUA, 2, this.key, `${this.key}:fence`, this.timeoutMs, this.id)) as string | null
    if (token) {
      this.token = token
      this.renewedAt = started
      return 'acquired'
    }
    return null
  }

  /** Forget the lease after the store reported us fenced. */
  drop(): void {
    this.token = null
  }

  async release(): Promise<void> {
    if (this.token === null) return
    const token = this.token
    this.token = null
    await this.redis.eval(RELEASE_LUA, 1, this.key, token).catch(() => undefined)
  }
}
