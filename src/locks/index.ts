export { AlreadyQueued, LockedError, LockLostError, LockStoreUnavailableError, holderOf } from './lock.js'
export type { MarkResult, AcquireResult, HolderInfo, LockListing, LockRecord, LockStore } from './lock.js'
export { lockIdFor, onceIdFor, parameterNames, DEFAULT_LOCK_TIMEOUT_S, DEFAULT_ONCE_TIMEOUT_S } from './lock-id.js'
export type { LockKey, TaskLockOptions, TaskOnceOptions } from './lock-id.js'
export { tryHold } from './hold.js'
export type { HeldLock, TryHold } from './hold.js'
export { closeLockStoreAt, closeLockStores, lockStoreAt, lockUrlFor, openLockStore, tokenCounterFor } from './open-store.js'
export type { LockSettings } from './open-store.js'
export { acquireTaskLock, lockedRetryDelay } from './task-lock.js'
export type { TaskLockAnswer, TaskLockRequest } from './task-lock.js'
// The stores themselves (redis-store.js, amqp-store.js, file-store.js) are not
// re-exported: importing them loads their drivers; lockStoreAt loads one on first use.
