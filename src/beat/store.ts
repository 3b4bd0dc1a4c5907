// What the scheduler and `tsq schedule` need from wherever entries live.
import type { Entry, EntryDefinition, EntryMeta } from './entry.js'

export type ReserveOutcome =
  /** The run is ours: the count moved from N to N+1. */
  | 'ok'
  /** Another beat (or this one, earlier) already recorded run N. */
  | 'stale'
  /** The lease token is no longer current: this beat was deposed. */
  | 'fenced'
  /** The entry was removed or disabled meanwhile. */
  | 'gone'

export interface DueBatch {
  entries: Entry[]
  /** The earliest due time (epoch ms) of an entry not yet due, if the store knows it. */
  nextDueAt: number | null
}

/** Lease fencing: a reservation fails unless this token still holds the lease at `key`. */
export interface Fence {
  key: string
  token: string
}

export interface ReserveRequest {
  name: string
  /** The run count the caller read; the reservation fails unless it is still current. */
  expectedCount: number
  ranAt: number
  /** When the run after this one is due, for the store's index. */
  nextDueAt: number
  /** Lease fencing: the reservation fails unless this token still holds the lease. */
  fence?: Fence
}

/** One run of a batch reservation (the fence is the batch's). */
export type ReserveRun = Omit<ReserveRequest, 'fence'>

/** The history a reservation writes: run N+1 at `ranAt` (what a release checks is still there). */
export function reservedMeta(run: ReserveRun): EntryMeta {
  return { lastRunAt: run.ranAt, totalRunCount: run.expectedCount + 1 }
}

/** A reserved run that was never sent, to be given back. */
export interface ReleaseRun extends ReserveRun {
  /** The history the entry had before the reservation. */
  previous: EntryMeta
}

export interface BeatStore {
  readonly kind: 'file' | 'redis' | 'django'
  /** Where the entries live, password masked. */
  readonly location: string
  /** Entries that may be due at `now` (the scheduler checks each with its schedule). */
  due(now: number): Promise<DueBatch>
  reserve(request: ReserveRequest): Promise<ReserveOutcome>
  /**
   * Reserves many runs at once, atomically: the fence is checked once, and
   * if it no longer holds every outcome is 'fenced' and nothing is written;
   * otherwise each run gets the outcome `reserve` would have given it.
   */
  reserveAll(runs: ReserveRun[], fence?: Fence): Promise<ReserveOutcome[]>
  /**
   * Gives back reservations whose task was never sent: each entry whose
   * history is still exactly what its reservation wrote gets `previous` back
   * and is due again at once. Returns how many were given back.
   */
  release(runs: ReleaseRun[]): Promise<number>
  /** Move an entry in the due index (after a change, or a not-yet-due check). */
  reschedule(name: string, dueAt: number): Promise<void>
  get(name: string): Promise<Entry | null>
  list(): Promise<Entry[]>
  /** Insert or replace a definition; the run history is kept unless `meta` is given. */
  save(definition: EntryDefinition, options?: { meta?: EntryMeta; now?: number }): Promise<void>
  remove(name: string): Promise<boolean>
  /** Make the app's entries present and drop earlier app entries no longer in it (RedBeat statics). */
  syncStatics(definitions: EntryDefinition[], now: number): Promise<void>
  /** Calls `listener` soon after any `tsq schedule` change, so a sleeping beat wakes. */
  watch(listener: () => void): Promise<() => Promise<void>>
  close(): Promise<void>
}
