// Which store holds the locks: `conf.lock_url` if set, else the broker's kind
// (redis://, amqp:// and file://). On RabbitMQ, a Redis result backend gives
// the fencing tokens (amqp-store.ts).
import { LockStoreUnavailableError, type LockStore } from './lock.js'
import { RedisLockStore } from './redis-store.js'
import { FileLockStore } from './file-store.js'
import { AmqpLockStore } from './amqp-store.js'

const AMQP_URL = /^(amqps?|pyamqp):\/\//
const REDIS_URL = /^rediss?:\/\//

export interface LockSettings {
  lockUrl?: string | null
  brokerUrl: string
  resultBackend?: string | null
}

/** The store's URL for these settings, or an error saying what to set. */
export function lockUrlFor(s: LockSettings): string {
  if (s.lockUrl) return s.lockUrl
  if (REDIS_URL.test(s.brokerUrl) || AMQP_URL.test(s.brokerUrl) || s.brokerUrl.startsWith('file://')) return s.brokerUrl
  if (s.resultBackend && REDIS_URL.test(s.resultBackend)) return s.resultBackend
  throw new Error(`no lock store for broker ${s.brokerUrl.replace(/\/\/[^@/]*@/, '//***@')}: set conf.lock_url to a redis://, amqp:// or file:// URL`)
}

/** Where an amqp:// store counts its fencing tokens: a Redis result backend, else none (tokens are 0). */
export function tokenCounterFor(s: LockSettings): string | null {
  return s.resultBackend && REDIS_URL.test(s.resultBackend) ? s.resultBackend : null
}

/** The store for these settings (lockStoreAt of lockUrlFor, with its token counter). */
export function openLockStore(s: LockSettings): LockStore {
  const url = lockUrlFor(s)
  return lockStoreAt(url, AMQP_URL.test(url) ? tokenCounterFor(s) : null)
}

const stores = new Map<string, LockStore>()

/** One store per URL per process, opened on first use. */
export function lockStoreAt(url: string, counterUrl: string | null = null): LockStore {
  let store = stores.get(url)
  if (!store) {
    if (REDIS_URL.test(url)) store = new RedisLockStore(url)
    else if (AMQP_URL.test(url)) store = new AmqpLockStore(url, counterUrl)
    else if (url.startsWith('file://')) store = new FileLockStore(url)
    else throw new LockStoreUnavailableError(url, new Error('lock_url must be a redis://, amqp:// or file:// URL'))
    stores.set(url, store)
  }
  return store
}

export async function closeLockStores(): Promise<void> {
  const all = [...stores.values()]
  stores.clear()
  await Promise.all(all.map((s) => s.close().catch(() => undefined)))
}
