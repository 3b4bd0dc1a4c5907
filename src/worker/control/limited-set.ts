// Celery's revoked set (celery.utils.collections.LimitedSet): at most maxlen
// ids, each forgotten `expires` seconds after it was added. Timestamps are
// monotonic, as Celery's, so a wall-clock jump neither expires nor keeps ids.

export const DEFAULT_REVOKES_MAX = 50_000
export const DEFAULT_REVOKE_EXPIRES = 10_800

function monotonicSeconds(): number {
  return performance.timeOrigin / 1000 + performance.now() / 1000
}

export class LimitedSet {
  private readonly data = new Map<string, number>()

  constructor(
    readonly maxlen = Number(process.env.CELERY_WORKER_REVOKES_MAX ?? DEFAULT_REVOKES_MAX),
    readonly expires = Number(process.env.CELERY_WORKER_REVOKE_EXPIRES ?? DEFAULT_REVOKE_EXPIRES),
    private readonly now: () => number = monotonicSeconds,
  ) {}

  add(id: string, at = this.now()): void {
    this.data.delete(id)
    this.data.set(id, at)
    this.purge()
  }

  has(id: string): boolean {
    const at = this.data.get(id)
    if (at === undefined) return false
    if (this.expires > 0 && this.now() - at > this.expires) {
      this.data.delete(id)
      return false
    }
    return true
  }

  /** Drops expired entries, then the oldest beyond maxlen (Map keeps insertion order). */
  purge(): void {
    const cutoff = this.now() - this.expires
    for (const [id, at] of this.data) {
      if (this.expires > 0 && at < cutoff) this.data.delete(id)
    }
    while (this.maxlen > 0 && this.data.size > this.maxlen) {
      const oldest = this.data.keys().next().value as string
      this.data.delete(oldest)
    }
  }

  get size(): number {
    return this.data.size
  }

  ids(): string[] {
    this.purge()
    return [...this.data.keys()]
  }

  /** `_data` as mingle sends it: id → [timestamp, id]. */
  toWire(): Record<string, [number, string]> {
    this.purge()
    const out: Record<string, [number, string]> = {}
    for (const [id, at] of this.data) out[id] = [at, id]
    return out
  }

  merge(wire: Record<string, unknown> | null | undefined): void {
    if (!wire) return
    for (const [id, value] of Object.entries(wire)) {
      const at = Array.isArray(value) && typeof value[0] === 'number' ? value[0] : this.now()
      if (!this.data.has(id)) this.data.set(id, at)
    }
    this.purge()
  }
}

/** Wall-clock seconds of each entry, for a state file that outlives this process's monotonic clock. */
export function limitedSetToWallClock(
  set: LimitedSet,
  monotonicNow = monotonicSeconds(),
  wallNow = Date.now() / 1000,
): Record<string, number> {
  const out: Record<string, number> = {}
  for (const [id, [at]] of Object.entries(set.toWire())) out[id] = wallNow - (monotonicNow - at)
  return out
}

export function limitedSetFromWallClock(
  set: LimitedSet,
  entries: Record<string, number>,
  monotonicNow = monotonicSeconds(),
  wallNow = Date.now() / 1000,
): void {
  const wire: Record<string, [number, string]> = {}
  for (const [id, wallAt] of Object.entries(entries)) if (typeof wallAt === 'number') wire[id] = [monotonicNow - (wallNow - wallAt), id]
  set.merge(wire)
}
