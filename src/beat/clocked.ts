// django-celery-beat's `clocked` schedule (clockedschedule.py): due once the
// clock passes one instant, whatever the last run was. The PeriodicTask that
// holds it is one_off, so the run that follows disables it; the store keeps
// a clocked entry that already ran from being offered again.

/** django_celery_beat.utils.NEVER_CHECK_TIMEOUT: seconds, "not again". */
export const NEVER_CHECK_S = 100_000_000

export class Clocked {
  constructor(
    /** Epoch ms. */
    readonly at: number,
  ) {
    if (!Number.isFinite(at)) throw new RangeError('clocked time must be a valid date')
  }

  toString(): string {
    return `<clocked: ${new Date(this.at).toISOString()}>`
  }

  isDue(_lastRunAt: number, now: number): { due: boolean; next: number } {
    const rem = (this.at - now) / 1000
    return rem <= 0 ? { due: true, next: NEVER_CHECK_S } : { due: false, next: rem }
  }

  dueAt(lastRunAt: number): number {
    // Past its instant and already run: not due again (the one_off run disables it).
    return lastRunAt >= this.at ? lastRunAt + NEVER_CHECK_S * 1000 : this.at
  }
}
