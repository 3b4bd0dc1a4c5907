// Which store holds the locks: `conf.lock_url` if set, else the broker's kind
// (redis://, amqp:// and file://). On RabbitMQ, a Redis result backend gives
// the fencing tokens (amqp-store.ts).
//
// A store's module (and with it ioredis or amqplib) is imported where a store
// is first opened, not with this one: every pool process loads the app, and
// through it this module, but most run no locked task and need no driver
// (issue 19's memory per process; test/e2e/worker-lazy-drivers.test.ts).
import { LockStoreUnavailableError, type LockStore } from './lock.js'

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
  throw new Error(
    `no lock store for broker ${s.brokerUrl.replace(/\/\/[^@/]*@/, '//***@')}: set conf.lock_url to a redis://, amqp:// or file:// URL`,
  )
}

/** Where an amqp:// store counts its fencing tokens: a Redis result backend, else none (tokens are 0). */
export function tokenCounterFor(s: LockSettings): string | null {
  return s.resultBackend && REDIS_URL.test(s.resultBackend) ? s.resultBackend : null
}

/** The store for these settings (lockStoreAt of lockUrlFor, with its token counter). */
export function openLockStore(s: LockSettings): Promise<LockStore> {
  const url = lockUrlFor(s)
  return lockStoreAt(url, AMQP_URL.test(url) ? tokenCounterFor(s) : null)
}

const stores = new Map<string, Promise<LockStore>>()

/** One store per URL per process, its module loaded on first use. A URL of no store kind rejects with LockStoreUnavailableError. */
export function lockStoreAt(url: string, counterUrl: string | null = null): Promise<LockStore> {
  let store = stores.get(url)
  if (!store) {
    store = loadStore(url, counterUrl)
    stores.set(url, store)
    // Not kept when it failed (a bad URL, a module that would not load): the next call says so again.
    store.catch(() => {
      if (stores.get(url) === store) stores.delete(url)
    })
  }
  return store
}

async function loadStore(url: string, counterUrl: string | null): Promise<LockStore> {
  if (REDIS_URL.test(url)) {
    const { RedisLockStore } = await import('./redis-store.js')
    return new RedisLockStore(url)
  }
  if (AMQP_URL.test(url)) {
    const { AmqpLockStore } = await import('./amqp-store.js')
    return new AmqpLockStore(url, counterUrl)
  }
  if (url.startsWith('file://')) {
    const { FileLockStore } = await import('./file-store.js')
    return new FileLockStore(url)
  }
  throw new LockStoreUnavailableError(url, new Error('lock_url must be a redis://, amqp:// or file:// URL'))
}

/** Closes the store at this URL and forgets it, so a later lockStoreAt opens a new one instead of handing out a closed one. */
export async function closeLockStoreAt(url: string): Promise<void> {
  const store = stores.get(url)
  if (!store) return
  stores.delete(url)
  await store.then((s) => s.close()).catch(() => undefined)
}

export async function closeLockStores(): Promise<void> {
  const all = [...stores.values()]
  stores.clear()
  await Promise.all(all.map((s) => s.then((store) => store.close()).catch(() => undefined)))
}
