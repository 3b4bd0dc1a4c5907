import { setLockHooks } from '../app/index.js'
import { withAppLock } from './app-lock.js'
import { runLocked } from './locked-run.js'
import { sendOnce } from './once.js'
import { closeLockStores } from './open-store.js'

export { AlreadyQueued, LockedError, LockLostError, LockStoreUnavailableError, holderOf } from './lock.js'
export type { MarkResult, AcquireResult, HolderInfo, LockListing, LockRecord, LockStore } from './lock.js'
export { lockIdFor, onceIdFor, parameterNames, DEFAULT_LOCK_TIMEOUT_S, DEFAULT_ONCE_TIMEOUT_S } from './lock-id.js'
export type { LockKey, TaskLockOptions, TaskOnceOptions } from '../app/index.js'
export { tryHold } from './hold.js'
export type { HeldLock, TryHold } from './hold.js'
export { closeLockStoreAt, closeLockStores, lockStoreAt, lockUrlFor, openLockStore, tokenCounterFor } from './open-store.js'
export type { LockSettings } from './open-store.js'
export { acquireTaskLock, lockedRetryDelay } from './task-lock.js'
export type { TaskLockAnswer, TaskLockRequest } from './task-lock.js'
// The worker's side: the locks a lost pool slot held, the lock `inspect active` shows, the once mark a finished task clears.
export { heldLockOf, releaseLostSlotLocks } from './locked-run.js'
export { clearOnceMark } from './once-mark.js'
// The stores themselves (redis-store.js, amqp-store.js, file-store.js) are not
// re-exported: importing them loads their drivers; lockStoreAt loads one on first use.

// The app's lock and once options and app.lock() call into here through these
// hooks (app/ sits below locks/): loading this module is what makes them work.
setLockHooks({ sendOnce, withAppLock, runLocked, closeLockStores })
