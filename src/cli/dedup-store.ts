// The dedup store `tsq dedup` reads: --lock-url, else the one the app's sends
// and workers use (the lock store's, src/locks/dedup/store.ts).
import { closeDedupStores, openDedupStore, type DedupListing, type DedupStore } from '../locks/index.js'
import type { ClientConfig } from './client-config.js'
import { withLockStore } from './lock-store.js'

/** As withLockStore (its errors and exit codes), with the dedup store of the same URL. */
export async function withDedupStore<T>(
  config: ClientConfig,
  lockUrl: string | undefined,
  fn: (store: DedupStore) => Promise<T>,
): Promise<T> {
  const settings = { lockUrl: lockUrl ?? config.lockUrl ?? null, brokerUrl: config.brokerUrl, resultBackend: config.resultBackend ?? null }
  try {
    return await withLockStore(config, lockUrl, async () => fn(await openDedupStore(settings)))
  } finally {
    await closeDedupStores()
  }
}

/** A dedup id as `tsq dedup ls` shows it (and --json gives it). */
export interface DedupRow {
  key: string
  taskId: string
  mode: string
  /** Seconds left; null: until the task finishes (simple mode). */
  ttlLeftS: number | null
  /** When the standing task is due, for a delayed one. */
  eta: string | null
  started: boolean
  since: string
}

export function dedupRow(l: DedupListing): DedupRow {
  return {
    key: l.key,
    taskId: l.taskId,
    mode: l.mode,
    ttlLeftS: l.leftMs === null ? null : Math.round(l.leftMs / 100) / 10,
    eta: l.etaMs > 0 ? new Date(l.etaMs).toISOString() : null,
    started: l.started,
    since: new Date(l.since).toISOString(),
  }
}
