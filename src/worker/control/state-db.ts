// `--statedb`: what a worker must remember across restarts (Celery's
// worker/state.py Persistent): the revoked ids with their ages, and the
// logical clock. Our own format, JSON, replaced atomically (write + rename) so
// a crash mid-write leaves the previous state; saved periodically too, so a
// kill -9 loses at most one interval.
import { readFileSync } from 'node:fs'
import { ensurePrivateFileSync, replaceFileSync, type LamportClock } from '../../transport/index.js'
import { limitedSetFromWallClock, limitedSetToWallClock, type LimitedSet } from './limited-set.js'

interface StateFile {
  format: 'tsq-statedb'
  version: 1
  clock: number
  /** id → wall-clock seconds when it was revoked. */
  revoked: Record<string, number>
}

export const DEFAULT_STATEDB_INTERVAL_S = 30

export class StateDb {
  private timer: NodeJS.Timeout | undefined

  constructor(
    readonly path: string,
    private readonly revoked: LimitedSet,
    private readonly clock: LamportClock,
    private readonly warn: (message: string) => void,
  ) {}

  /** Merges the saved state into the live one; a missing file is a first start. */
  load(): void {
    let raw: string
    try {
      raw = readFileSync(this.path, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.warn(`statedb ${this.path} unreadable: ${(error as Error).message}`)
      return
    }
    try {
      const state = JSON.parse(raw) as Partial<StateFile>
      if (state.format !== 'tsq-statedb') throw new Error('not a tsq statedb file')
      if (state.revoked && typeof state.revoked === 'object') limitedSetFromWallClock(this.revoked, state.revoked)
      if (typeof state.clock === 'number') this.clock.adjust(state.clock)
    } catch (error) {
      this.warn(`statedb ${this.path} ignored: ${(error as Error).message}`)
    }
  }

  save(): void {
    const state: StateFile = { format: 'tsq-statedb', version: 1, clock: this.clock.value, revoked: limitedSetToWallClock(this.revoked) }
    const tmp = `${this.path}.${process.pid}.tmp`
    try {
      ensurePrivateFileSync(this.path, 'statedb')
      replaceFileSync(tmp, this.path, JSON.stringify(state))
    } catch (error) {
      this.warn(`statedb ${this.path} not saved: ${(error as Error).message}`)
    }
  }

  startPeriodicSave(intervalS = Number(process.env.TSQ_STATEDB_INTERVAL ?? DEFAULT_STATEDB_INTERVAL_S)): void {
    const ms = Number.isFinite(intervalS) && intervalS > 0 ? intervalS * 1000 : DEFAULT_STATEDB_INTERVAL_S * 1000
    this.timer = setInterval(() => this.save(), ms)
    this.timer.unref()
  }

  close(): void {
    if (this.timer) clearInterval(this.timer)
    this.save()
  }
}
