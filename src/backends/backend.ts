import type { ResultMeta } from '../protocol/index.js'
import type { ResultCodec } from './result-codec.js'
import type { FailedStore } from './failed/index.js'
import { codedError, TsqError } from '../protocol/index.js'

export const READY = new Set(['SUCCESS', 'FAILURE', 'REVOKED'])

/** True when a write of `status` must leave the stored state alone: a stored SUCCESS is never overwritten. */
export function keepsStoredSuccess(stored: unknown, status: string): boolean {
  return stored === 'SUCCESS' && status !== 'SUCCESS'
}

export interface ResultBackend {
  readonly displayUrl: string
  /** The stored meta, or null when the backend knows nothing of the id (PENDING). */
  get(taskId: string): Promise<ResultMeta | null>
  /** Resolves with the first ready meta; rejects with ResultTimeoutError after timeoutMs (undefined: wait forever). */
  waitReady(taskId: string, timeoutMs?: number): Promise<ResultMeta>
  /**
   * Stores an encoded meta (spec §2.2): kombu JSON text, or bytes already in
   * `codec`'s serializer. A stored SUCCESS is never overwritten.
   */
  store(taskId: string, meta: string | Uint8Array, status: string, target?: StoreTarget): Promise<void>
  /** result_serializer and result_accept_content, where the store honours them. */
  readonly codec?: ResultCodec
  /**
   * Counts one finished chord header task (spec §2.3, Celery's
   * `on_chord_part_return`). Resolves with every part, in group order, when
   * this one completed the chord (the caller then runs or fails the body),
   * else with null. Absent where Celery has no chords either (rpc://).
   */
  chordPartReturn?(groupId: string, groupIndex: number | null, part: string, taskId?: string): Promise<string[] | null>
  /** One more part for a chord to wait for (Celery's `add_to_chord`: the `.t` key). */
  addToChord?(groupId: string): Promise<void>
  /** How many header tasks a chord waits for (Celery's `set_chord_size`), set before they are sent. */
  setChordSize?(groupId: string, size: number): Promise<void>
  /**
   * Celery's GroupResult.save (`celery-taskset-meta-<id>` on Redis): a chord
   * header that holds a group is saved whole, its `as_tuple()`, before its
   * tasks are sent, so the part that completes the chord can give the body
   * that member's results as a nested list.
   */
  saveGroupResult?(groupId: string, tuple: unknown[]): Promise<void>
  /** The tuple saved for the id (GroupResult.restore), or null when none is. */
  restoreGroupResult?(groupId: string): Promise<unknown>
  /** Drops what is stored for the task (Celery's AsyncResult.forget()); afterwards it reads as PENDING. */
  forget(taskId: string): Promise<void>
  /**
   * Chords are joined by Celery's `celery.chord_unlock` task polling the
   * header (the SQL backends' fallback_chord_unlock), not by counting.
   */
  readonly chordUnlock?: boolean
  /** rpc:// encodes its short form (spec §2.4); key-value stores the full meta. */
  readonly shortForm?: boolean
  /** The failed-task inbox on this store (its FAILURE results, the messages kept of them); absent on rpc://. */
  failedStore?(): FailedStore
  close(): Promise<void>
}

/** Where an rpc result goes: the request's reply_to and correlation_id. */
export interface StoreTarget {
  replyTo?: string
  correlationId?: string
}

export class ResultTimeoutError extends TsqError {
  constructor(taskId: string, seconds: number) {
    super('RESULT_TIMEOUT', `no result for ${taskId} within ${seconds} s (still PENDING)`)
  }
}

export class UnsupportedBackendError extends codedError('CONFIG') {}

/** waitReady for the stores that cannot notify: `get` every `pollMs` until ready, or the timeout. */
export async function pollUntilReady(
  get: (taskId: string) => Promise<ResultMeta | null>,
  taskId: string,
  timeoutMs: number | undefined,
  pollMs: number,
): Promise<ResultMeta> {
  const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs
  for (;;) {
    const meta = await get(taskId)
    if (meta && READY.has(meta.status)) return meta
    if (Date.now() >= deadline) throw new ResultTimeoutError(taskId, (timeoutMs ?? 0) / 1000)
    await new Promise((r) => setTimeout(r, Math.min(pollMs, Math.max(0, deadline - Date.now()))))
  }
}
