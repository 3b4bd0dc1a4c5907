// Whether the claim loop splits a small prefetch window into two claims on the
// wire at once, so that Redis runs one claim while the worker reads the other.
//
// Neither way wins everywhere. On the 2-core test VM, tsq solo at its default
// window of 8 drained 23-24k tasks/s split against 18-19.5k whole while the
// machine was otherwise idle, at about the same CPU per task; with one core
// taken by other work, 14.5k split against 17.6-17.9k whole, for more CPU per
// task: the worker and Redis, both runnable at once, then wait on each other
// for a CPU, where one claim at a time has them take turns on one core.
//
// Linux tells the two cases apart: /proc/self/schedstat counts the time the
// main thread spent runnable but not running. Over those drains that was
// 10-13% of wall time on the idle machine, either way, and 38-47% on the busy
// one, either way; so the split is on while it stays low, with a gap between
// the two thresholds so that the loop does not flap between them. Where the
// kernel does not say, claims stay whole, as before.
//
// Only the solo pool's worker asks for it (RedisTransportOptions.overlapClaims):
// prefork's and threads' dispatcher is CPU-bound on this path, and there the
// split drained 6-10% less at -c 2 on the idle machine.
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
