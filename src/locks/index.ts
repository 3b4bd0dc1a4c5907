// Task locks: one LockStore contract (acquire, renew, release, fencing token,
// once marks) and a store per broker kind (redis, amqp exclusive queue,
// file), opened by URL; the lock ids of the task options `lock` and `once`;
// holding, renewing and releasing a lock. Sits on transport/ (connections,
// private files) and protocol/ only: the app passes in where its locks live
// and the task to lock (app/locking.ts, app/execution/locked-run.ts).
export { AlreadyQueued, LockedError, LockLostError, LockStoreUnavailableError, holderOf } from './lock.js'
export type { MarkResult, AcquireResult, HolderInfo, LockListing, LockRecord, LockStore } from './lock.js'
export type { AppLockOptions, Lease, LockedTask, LockKey, OnceSendOptions, TaskLockOptions, TaskOnceOptions } from './options.js'
export { lockIdFor, onceIdFor, parameterNames, DEFAULT_LOCK_TIMEOUT_S, DEFAULT_ONCE_TIMEOUT_S } from './lock-id.js'
export { tryHold } from './hold.js'
export type { HeldLock, TryHold } from './hold.js'
export { closeLockStoreAt, closeLockStores, lockStoreAt, lockUrlFor, openLockStore, tokenCounterFor } from './open-store.js'
export type { LockSettings } from './open-store.js'
// A task's lock around its run (the pool slot's side), and the worker main process's: who holds it, freeing a lost slot's.
export { acquireTaskLock, lockedRetryDelay, heldLockOf, releaseLostSlotLocks } from './task-lock.js'
export type { TaskLockAnswer, TaskLockRequest } from './task-lock.js'
export { withLock } from './app-lock.js'
export { sendOnce } from './once.js'
export { clearOnceMark } from './once-mark.js'
// Deduplication at send (dedup/): BullMQ's simple, throttle and debounce modes, in the lock store's backend.
export { sendDeduplicated } from './dedup/send.js'
export type { DedupSend } from './dedup/send.js'
export { openDedupStore, closeDedupStores } from './dedup/store.js'
export type { DedupStore } from './dedup/store.js'
export { DEDUP_HEADER, readDedupHeader, receiptRequestOf } from './dedup/header.js'
export type { DedupHeader } from './dedup/header.js'
export { dedupRequestOf, modeOf } from './dedup/rules.js'
export type { DedupMode, DedupOptions, DedupRequest, DedupListing, OfferAnswer, ClaimAnswer } from './dedup/rules.js'
// The stores themselves (redis-store.js, amqp-store.js, file-store.js) are not
// re-exported: importing them loads their drivers; lockStoreAt loads one on first use.
// Cluster-wide rate limits: a slot schedule per task in Redis (rate-bucket.ts), its store opened on first use.
export { takeSlot, intervalUsOf, DEFAULT_BURST, DEFAULT_HORIZON_MS, TAKE_SLOT_LUA } from './rate-bucket.js'
export type { BucketAnswer, BucketParams, TakeResult } from './rate-bucket.js'
export { closeRateStores, openRateStore, rateUrlFor, RateStoreUnavailableError } from './rate-store.js'
export type { RateStore, RateStoreOptions, StoredRate, TakeOptions } from './rate-store.js'
// Concurrency per key, fair between keys: the rule a task's option or task_concurrency gives, and the store of slots and backlogs.
export {
  ConcurrencyOptionError,
  DEFAULT_CONCURRENCY_LEASE_S,
  closeConcurrencyStores,
  concurrencyRule,
  concurrencyStoreAt,
  concurrencyUrlFor,
} from './concurrency.js'
export type {
  ClaimedEntry,
  ConcurrencyKeyStats,
  ConcurrencyRule,
  ConcurrencyScopeStats,
  ConcurrencyStore,
  ParkedEntry,
  TaskConcurrencyOptions,
} from './concurrency.js'
