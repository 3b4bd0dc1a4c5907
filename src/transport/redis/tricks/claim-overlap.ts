// Whether the claim loop splits a small prefetch window into two claims on the
// wire at once, so that Redis runs one claim while the worker reads the other.
// That pays while a CPU is free and costs when the worker and Redis must wait
// for one (bench/README.md#tricks), so Linux's run-delay counter
// (/proc/self/schedstat: time the main thread spent runnable but not running)
// decides, with a gap between the thresholds so the loop does not flap; where
// the kernel does not say, claims stay whole. Only the solo pool's worker asks
// for it (RedisTransportOptions.overlapClaims): prefork's and threads'
// dispatcher is CPU-bound on this path. Switch: TSQ_NO_CLAIM_OVERLAP.
import { readFileSync } from 'node:fs'

/** How often the counter is read while claims are being sent. */
const SAMPLE_MS = 100
/** A sample over a longer gap (claims paused) says nothing about the cores now. */
const STALE_SAMPLE_MS = 4 * SAMPLE_MS
/** Above this share of wall time spent waiting for a CPU, claims go whole. */
const BUSY_SHARE = 0.3
/** Below this, claims split again. */
const FREE_SHARE = 0.2

/** Nanoseconds the main thread has waited runnable; undefined where the kernel does not say. */
export type RunDelayReader = () => number | undefined

export function readRunDelayNs(): number | undefined {
  try {
    // "<on-cpu ns> <waiting-on-runqueue ns> <timeslices>"
    const waiting = Number(readFileSync('/proc/self/schedstat', 'utf8').split(' ')[1])
    return Number.isFinite(waiting) ? waiting : undefined
  } catch {
    return undefined
  }
}

export class ClaimOverlap {
  private on: boolean
  private lastAt = -Infinity
  private lastDelay: number | undefined
  private readonly supported: boolean

  constructor(
    private readonly readDelay: RunDelayReader = readRunDelayNs,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.supported = readDelay() !== undefined
    this.on = this.supported
  }

  /** Whether claims split the window now; cheap between samples. */
  split(): boolean {
    if (!this.supported) return false
    const now = this.now()
    if (now - this.lastAt >= SAMPLE_MS) this.sample(now)
    return this.on
  }

  private sample(now: number): void {
    const delay = this.readDelay()
    const elapsed = now - this.lastAt
    const prior = this.lastDelay
    this.lastAt = now
    this.lastDelay = delay
    if (delay === undefined || prior === undefined || elapsed > STALE_SAMPLE_MS) return
    const share = (delay - prior) / 1e6 / elapsed
    if (this.on && share > BUSY_SHARE) this.on = false
    else if (!this.on && share < FREE_SHARE) this.on = true
  }
}
