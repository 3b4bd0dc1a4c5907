// The limits the worker applies per task: its rate as Celery parses it
// (`10/s`, `100/m`, `5/h`, or a bare number per second), enforced with a token
// bucket, and its hard and soft time limits; `control rate_limit` and
// `control time_limit` change them while the worker runs. A rate limit of
// scope 'cluster' has no bucket here: it is the cluster's (cluster-rate.ts).
import type { App } from '../../app/index.js'
import { codedError } from '../../protocol/index.js'
import type { Request } from './request.js'

/** A rate limit Celery's `rate()` would not read either. */
export class RateLimitError extends codedError('BAD_ARGUMENT') {}

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600 }

/** Tasks per second, or 0 for no limit (Celery's `rate()`). */
export function parseRate(value: string | number | null | undefined): number {
  if (value === null || value === undefined || value === '' || value === 0) return 0
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) throw new RateLimitError(`Invalid rate limit string: ${value}`)
    return value
  }
  const match = /^\s*(\d+(?:\.\d+)?)\s*(?:\/\s*([smh]))?\s*$/.exec(value)
  if (!match) throw new RateLimitError(`Invalid rate limit string: ${JSON.stringify(value)}`)
  const per = UNITS[match[2] ?? 's']!
  return Number(match[1]) / per
}

export class TokenBucket {
  private tokens: number
  private last: number

  constructor(
    readonly ratePerSecond: number,
    readonly capacity = 1,
    private readonly now: () => number = () => performance.now() / 1000,
  ) {
    this.tokens = capacity
    this.last = now()
  }

  private refill(): void {
    const t = this.now()
    this.tokens = Math.min(this.capacity, this.tokens + (t - this.last) * this.ratePerSecond)
    this.last = t
  }

  /** Seconds until a token is there, without taking it. */
  peek(): number {
    this.refill()
    return this.tokens >= 1 ? 0 : (1 - this.tokens) / this.ratePerSecond
  }

  /** Takes a token if one is there; else returns the seconds until one will be. */
  take(): number {
    this.refill()
    if (this.tokens >= 1) {
      this.tokens -= 1
      return 0
    }
    return (1 - this.tokens) / this.ratePerSecond
  }
}

export interface TimeLimits {
  hard: number | null
  soft: number | null
}

export type RateScope = 'worker' | 'cluster'

export class TaskLimits {
  /** Per task name: the rate in force (as given) and its bucket (null: no limit). */
  readonly rateLimits = new Map<string, { rate: string | number | null; bucket: TokenBucket | null }>()
  /** Per task name: the limits `control time_limit` set. */
  readonly timeLimits = new Map<string, TimeLimits>()

  constructor(
    private readonly app: App,
    /** The worker's --time-limit and --soft-time-limit. */
    private readonly worker: TimeLimits,
  ) {}

  /** Whose rate limit binds a run of `name`: this worker's bucket, or the cluster's. */
  scopeOf(name: string): RateScope {
    const scope = this.app.tasks.get(name)?.options.rateLimitScope
    if (scope === undefined || scope === 'worker') return 'worker'
    if (scope === 'cluster') return 'cluster'
    throw new RateLimitError(`Invalid rate limit scope for ${name}: ${JSON.stringify(scope)} (worker or cluster)`)
  }

  /** The task's own rate (its option; `control rate_limit`'s for the cluster is in the cluster's store). */
  defaultRateOf(name: string): string | number | null {
    return this.app.tasks.get(name)?.options.rateLimit ?? null
  }

  private bucketFor(name: string): TokenBucket | null {
    const configured = this.rateLimits.get(name)
    if (configured) return configured.bucket
    const rate = this.defaultRateOf(name)
    const perSecond = this.scopeOf(name) === 'cluster' ? 0 : parseRate(rate)
    const bucket = perSecond > 0 ? new TokenBucket(perSecond) : null
    this.rateLimits.set(name, { rate, bucket })
    return bucket
  }

  /** Takes a token for a run of `name` if one is there (0); else the seconds until one will be. */
  takeToken(name: string): number {
    return this.bucketFor(name)?.take() ?? 0
  }

  /** Seconds until a run of `name` may start, without taking its token. */
  secondsUntilToken(name: string): number {
    return this.bucketFor(name)?.peek() ?? 0
  }

  setRateLimit(name: string, rate: string | number | null): void {
    const perSecond = parseRate(rate)
    const local = this.scopeOf(name) === 'worker' && perSecond > 0
    this.rateLimits.set(name, { rate, bucket: local ? new TokenBucket(perSecond) : null })
  }

  /** The message's own limits first, then `control time_limit`, the task's options, the worker's. */
  timeLimitsOf(request: Request): TimeLimits {
    const override = this.timeLimits.get(request.name)
    const task = this.app.tasks.get(request.name)
    const [hdrHard, hdrSoft] = request.message.timelimit
    return {
      hard: hdrHard ?? override?.hard ?? task?.options.timeLimit ?? this.worker.hard,
      soft: hdrSoft ?? override?.soft ?? task?.options.softTimeLimit ?? this.worker.soft,
    }
  }
}
