// The dedup store `tsq dedup` reads: --lock-url, else the one the app's sends
// and workers use (the lock store's, src/locks/dedup/store.ts).
import { closeDedupStores, closeLockStores, lockUrlFor, openDedupStore, type DedupListing, type DedupStore } from '../locks/index.js'
import type { ClientConfig } from './client-config.js'
import { CliError } from './errors.js'

export async function withDedupStore<T>(
  config: ClientConfig,
  lockUrl: string | undefined,
  fn: (store: DedupStore) => Promise<T>,
): Promise<T> {
  const settings = { lockUrl: lockUrl ?? config.lockUrl ?? null, brokerUrl: config.brokerUrl, resultBackend: config.resultBackend ?? null }
  let url: string
  try {
    url = lockUrlFor(settings)
  } catch (error) {
    throw new CliError('CONFIG', (error as Error).message.replace('set conf.lock_url to', 'pass --lock-url with'))
  }
  let store: DedupStore
  try {
    store = await openDedupStore(settings)
  } catch (error) {
    throw new CliError('BAD_URL', (error as Error).message)
  }
  try {
    return await fn(store)
  } catch (error) {
    if (error instanceof CliError) throw error
    throw new CliError(
      'BROKER_UNREACHABLE',
      `dedup store ${url.replace(/\/\/[^@/]*@/, '//***@')} unreachable: ${(error as Error).message}`,
      {
        cause: error,
      },
    )
  } finally {
    await closeDedupStores()
    await closeLockStores()
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
