// Celery's `schedule(run_every, relative)` (spec §8.3).
import { resolveWall, wallOf } from './timezone.js'

export class Interval {
  constructor(
    /** Seconds; may be fractional. */
    readonly every: number,
    readonly relative = false,
    readonly tz = 'UTC',
  ) {
    if (!Number.isFinite(every) || every <= 0) throw new RangeError(`interval must be a positive number of seconds, got ${every}`)
  }

  toString(): string {
    return `<freq: ${this.every}s${this.relative ? ' relative' : ''}>`
  }

  /** When the run after `lastRunAt` is due (epoch ms). */
  dueAt(lastRunAt: number): number {
    const end = lastRunAt + this.every * 1000
    return this.relative ? this.roundDown(end) : end
  }

  isDue(lastRunAt: number, now: number): { due: boolean; next: number } {
    const rem = (this.dueAt(lastRunAt) - now) / 1000
    if (rem <= 0) return { due: true, next: this.every }
    return { due: false, next: rem }
  }

  /** celery.utils.time.delta_resolution, in the app's timezone, microseconds zeroed. */
  private roundDown(ms: number): number {
    const w = wallOf(this.tz, ms)
    const s = this.every
    if (s >= 86_400) Object.assign(w, { hour: 0, minute: 0, second: 0 })
    else if (s >= 3600) Object.assign(w, { minute: 0, second: 0 })
    else if (s >= 60) w.second = 0
    else return Math.floor(ms / 1000) * 1000
    const r = resolveWall(this.tz, w)
    if (r.kind === 'gap') return r.firstValid
    return r.instants.filter((i) => i <= ms).pop() ?? r.instants[0]!
  }
}
