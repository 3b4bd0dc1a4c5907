// The dedup store contract and which one holds an app's dedup ids: the lock
// store's (conf.lock_url, else the broker's kind, open-store.ts), Redis with
// one key per id, RabbitMQ and file:// as one document (document-store.ts).
// Opened on first use, as the lock stores are: most processes never load one.
import { LockStoreUnavailableError } from '../lock.js'
import { lockStoreAt, lockUrlFor, tokenCounterFor, type LockSettings } from '../open-store.js'
import type { ClaimAnswer, DedupListing, DedupRequest, OfferAnswer } from './rules.js'

export interface DedupStore {
  readonly kind: 'redis' | 'file' | 'amqp' | 'memory'
  /** A send (or a receipt): does this task stand, or which one does? */
  offer(r: DedupRequest, now?: number): Promise<OfferAnswer>
  /** A delayed task's ETA came: run it, or drop it (replaced). */
  claim(key: string, taskId: string, now?: number): Promise<ClaimAnswer>
  /** The standing task finished: its id is free (if it still stands for it). */
  release(key: string, taskId: string): Promise<boolean>
  list(now?: number): Promise<DedupListing[]>
  /** An operator's `tsq dedup rm`: the id is free whoever stands for it. */
  remove(key: string): Promise<boolean>
  close(): Promise<void>
}

const AMQP_URL = /^(amqps?|pyamqp):\/\//
const REDIS_URL = /^rediss?:\/\//
const stores = new Map<string, Promise<DedupStore>>()

/** The dedup store for these settings, one per URL per process. */
export function openDedupStore(s: LockSettings): Promise<DedupStore> {
  let url: string
  try {
    url = lockUrlFor(s)
  } catch (error) {
    return Promise.reject(error)
  }
  let store = stores.get(url)
  if (!store) {
    store = loadStore(url, AMQP_URL.test(url) ? tokenCounterFor(s) : null)
    stores.set(url, store)
    store.catch(() => {
      if (stores.get(url) === store) stores.delete(url)
    })
  }
  return store
}

async function loadStore(url: string, counterUrl: string | null): Promise<DedupStore> {
  if (REDIS_URL.test(url)) {
    const { RedisDedupStore } = await import('./redis-store.js')
    return new RedisDedupStore(url)
  }
  const { amqpDocument, fileDocument, DocumentDedupStore } = await import('./document-store.js')
  // On RabbitMQ and file:// the document lives in the lock store's own backend (its mutex).
  const locks = await lockStoreAt(url, counterUrl)
  if (AMQP_URL.test(url)) return new DocumentDedupStore('amqp', amqpDocument(locks))
  if (url.startsWith('file://')) return new DocumentDedupStore('file', fileDocument(locks))
  throw new LockStoreUnavailableError(url, new Error('lock_url must be a redis://, amqp:// or file:// URL'))
}

export async function closeDedupStores(): Promise<void> {
  const all = [...stores.values()]
  stores.clear()
  await Promise.all(all.map((s) => s.then((store) => store.close()).catch(() => undefined)))
}
