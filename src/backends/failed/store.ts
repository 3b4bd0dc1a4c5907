// The failed-task inbox's side of a result backend: the FAILURE results it
// holds, and the task messages a tsq worker kept when they failed
// (kept-message.ts), bounded by a TTL and a count. One per backend kind:
// Redis keys, an SQL table, files beside the file:// store's results.
import type { ResultMeta } from '../../protocol/index.js'
import type { KeptMessage } from './kept-message.js'

export interface FailedStore {
  /** The FAILURE results the backend holds, newest first, at most `limit`. */
  failures(limit: number): Promise<ResultMeta[]>
  /** Keeps the message of a task that failed, in place of an older one under the same id. */
  keep(message: KeptMessage): Promise<void>
  kept(taskId: string): Promise<KeptMessage | null>
  /** The kept messages, newest first, at most `limit`. */
  keptList(limit: number): Promise<KeptMessage[]>
  /** Drops the kept messages of these ids (the results are the backend's forget()). */
  drop(taskIds: readonly string[]): Promise<void>
}

/** Newest first by date_done (a meta without one last). */
export function newestFirst(metas: ResultMeta[]): ResultMeta[] {
  return metas.sort((a, b) => String(b.date_done ?? '').localeCompare(String(a.date_done ?? '')))
}
