// Which store holds the locks: `conf.lock_url` if set, else the broker's kind
// (redis:// and file://); on RabbitMQ, the result backend when it is Redis.
import { LockStoreUnavailableError, type LockStore } from './lock.js'
import { RedisLockStore } from './redis-store.js'
import { FileLockStore } from './file-store.js'

export interface LockSettings {
  lockUrl?: string | null
  brokerUrl: string
  resultBackend?: string | null
}

/** The store's URL for these settings, or an error saying what to set. */
export function lockUrlFor(s: LockSettings): string {
  if (s.lockUrl) return s.lockUrl
  if (/^rediss?:\/\//.test(s.brokerUrl) || s.brokerUrl.startsWith('file://')) return s.brokerUrl
  if (s.resultBackend && /^rediss?:\/\//.test(s.resultBackend)) return s.resultBackend
  throw new Error(`no lock store for broker ${s.brokerUrl.replace(/\/\/[^@/]*@/, '//***@')}: set conf.lock_url to a redis:// or file:// URL`)
}

const stores = new Map<string, LockStore>()

/** One store per URL per process, opened on first use. */
export function lockStoreAt(url: string): LockStore {
  let store = stores.get(url)
  if (!store) {
    if (/^rediss?:\/\//.test(url)) store = new RedisLockStore(url)
    else if (url.startsWith('file://')) store = new FileLockStore(url)
    else throw new LockStoreUnavailableError(url, new Error('lock_url must be a redis:// or file:// URL'))
    stores.set(url, store)
  }
  return store
}

export async function closeLockStores(): Promise<void> {
  const all = [...stores.values()]
  stores.clear()
  await Promise.all(all.map((s) => s.close().catch(() => undefined)))
}
