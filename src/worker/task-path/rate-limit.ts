// Per-task rate limits as Celery parses them (`10/s`, `100/m`, `5/h`, or a
// bare number per second), enforced with a token bucket.

export class RateLimitError extends Error {
  readonly code = 'BAD_ARGUMENT'
}

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
