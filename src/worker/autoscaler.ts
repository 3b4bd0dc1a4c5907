// `--autoscale=MAX,MIN` (Celery's worker/autoscale.py): every second, grow the
// pool towards MAX while tasks wait, and shrink it towards MIN once the pool
// has been over-sized for `keepalive` seconds since the last growth.
import type { Pool } from './pools/pool.js'

/** Celery reads the same variable. */
export const AUTOSCALE_KEEPALIVE_S = Number(process.env.AUTOSCALE_KEEPALIVE ?? 30)

export interface AutoscalerOptions {
  max: number
  min: number
  pool: Pool
  /** Tasks this worker holds that want a slot: running plus reserved. */
  qty: () => number
  log: (message: string) => void
  /** Called when max changes, so the consumer's prefetch follows it. */
  onRangeChange: () => void
  keepaliveS?: number
  intervalMs?: number
}

export class Autoscaler {
  max: number
  min: number
  private lastScaleUp = 0
  private timer: NodeJS.Timeout | undefined
  private busy = false

  constructor(private readonly o: AutoscalerOptions) {
    this.max = o.max
    this.min = o.min
  }

  start(): void {
    this.timer = setInterval(() => void this.maybeScale(), this.o.intervalMs ?? 1000)
    this.timer.unref()
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
  }

  set(max: number, min: number): void {
    if (!Number.isInteger(max) || !Number.isInteger(min) || max < 1 || min < 0 || min > max)
      throw new RangeError(`autoscale range must satisfy 0 <= min <= max, got max=${max} min=${min}`)
    this.max = max
    this.min = min
    this.o.onRangeChange()
    void this.maybeScale()
  }

  info(): Record<string, number> {
    return { max: this.max, min: this.min, current: this.o.pool.size, qty: this.o.qty() }
  }

  /** Resolves true when it changed the pool. */
  async maybeScale(): Promise<boolean> {
    if (this.busy) return false
    this.busy = true
    try {
      const procs = this.o.pool.size
      const qty = this.o.qty()
      const up = Math.min(qty, this.max)
      if (up > procs) {
        this.o.log(`Scaling up ${up - procs} processes.`)
        this.lastScaleUp = Date.now()
        await this.o.pool.grow(up - procs)
        return true
      }
      const down = Math.max(qty, this.min, 1)
      const keepalive = (this.o.keepaliveS ?? AUTOSCALE_KEEPALIVE_S) * 1000
      if (down < procs && Date.now() - this.lastScaleUp > keepalive) {
        this.o.log(`Scaling down ${procs - down} processes.`)
        await this.o.pool.shrink(procs - down)
        return true
      }
      return false
    } catch (error) {
      this.o.log(`Autoscaler: ${(error as Error).message}`)
      return false
    } finally {
      this.busy = false
    }
  }
}
