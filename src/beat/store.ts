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

export interface ReserveRequest {
  name: string
  /** The run count the caller read; the reservation fails unless it is still current. */
  expectedCount: number
  ranAt: number
  /** When the run after this one is due, for the store's index. */
  nextDueAt: number
  /** Lease fencing: the reservation fails unless this token still holds the lease. */
  fence?: { key: string; token: string }
}

export interface BeatStore {
  readonly kind: 'file' | 'redis'
  /** Where the entries live, password masked. */
  readonly location: string
  /** Entries that may be due at `now` (the scheduler checks each with its schedule). */
  due(now: number): Promise<DueBatch>
  reserve(request: ReserveRequest): Promise<ReserveOutcome>
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
