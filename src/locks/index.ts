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
// The stores themselves (redis-store.js, amqp-store.js, file-store.js) are not
// re-exported: importing them loads their drivers; lockStoreAt loads one on first use.
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
