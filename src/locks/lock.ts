// The Lock contract: what a store must do for the worker (around a task's run)
// and for app.lock() (around user code). Stores: redis-store.ts, file-store.ts.
// This layer imports nothing above protocol/: app/ and worker/ call it.
import { TsqError } from '../protocol/index.js'

/** Who holds a lock, and since when. Stored beside the lock, shown by `tsq locks`. */
export interface LockRecord {
  /** The lock's id: `<task>-lock-<md5>` for a task lock, the name given for app.lock(). */
  id: string
  /** The fencing token: grows with every acquisition of this lock id. */
  token: number
  /** `<node>:<pid>`: the process that holds it (a pool process for a task). */
  holder: string
  node: string
  pid: number
  /** The task's name and id, null for app.lock(). */
  task: string | null
  taskId: string | null
  /** Unix ms of the acquisition. */
  acquiredAt: number
  /** The lease, ms: renewed every third of it while the holder lives. */
  leaseMs: number
}

/** A record as a store lists it: with the lease left, ms. */
export interface LockListing extends LockRecord {
  leftMs: number
}

export interface HolderInfo {
  node: string
  pid: number
  /** A threads-pool slot's thread id: threads share the worker's pid, so the holder names the thread too. */
  thread?: number
  task: string | null
  taskId: string | null
}

export type AcquireResult = { acquired: true; record: LockRecord } | { acquired: false; remainingMs: number }

/** A `once` mark set, or the one already there: the task it names and its time left. */
export type MarkResult = { set: true } | { set: false; taskId: string; remainingMs: number }

export interface LockStore {
  readonly kind: 'redis' | 'file' | 'amqp'
  /** Takes the lock if free (or its lease ran out), with a new token. */
  acquire(id: string, leaseMs: number, who: HolderInfo): Promise<AcquireResult>
  /** Extends the lease to a full one if `record` still holds it; false: it was lost (expired and taken, or removed). */
  renew(record: LockRecord): Promise<boolean>
  /** Frees the lock if `record` still holds it; false when it no longer did. */
  release(record: LockRecord): Promise<boolean>
  /**
   * True while a release, once called, is sure to reach the store ahead of
   * anything this process asks it next (one connection whose commands run in
   * order, and connected now): a task's run may then end without waiting for
   * the release's answer (HeldLock.letGo).
   */
  readonly releasesInOrder?: boolean
  /** Frees every lock `holder` (`<node>:<pid>`) still holds: a pool process died. Returns their ids. */
  releaseHolder(holder: string): Promise<string[]>
  list(): Promise<LockListing[]>
  get(id: string): Promise<LockListing | null>
  /** Frees the lock whoever holds it (an operator's `tsq locks rm`). */
  remove(id: string): Promise<boolean>
  /** Sets the `once` mark `id` to `taskId` for `ttlMs` unless one is there (sender-side de-duplication). */
  mark(id: string, taskId: string, ttlMs: number): Promise<MarkResult>
  /** Clears the mark `id` if it still names `taskId` (a later send's mark is left alone). */
  unmark(id: string, taskId: string): Promise<boolean>
  close(): Promise<void>
}

/** The task's lock is held by another run (`onLocked: 'fail'`). */
export class LockedError extends TsqError {
  override name = 'LockedError'
  readonly module = 'tsq.locks'
  constructor(
    readonly lockId: string,
    readonly remainingMs: number,
  ) {
    super('LOCKED', `lock ${lockId} is held by another run (${Math.ceil(remainingMs / 1000)} s of its lease left)`)
  }
  get args(): unknown[] {
    return [this.message]
  }
}

/**
 * celery-once's AlreadyQueued: a task with the `once` option was sent while
 * another with the same key is queued or running.
 */
export class AlreadyQueued extends TsqError {
  override name = 'AlreadyQueued'
  constructor(
    readonly markId: string,
    /** The task the mark names. */
    readonly taskId: string,
    readonly remainingMs: number,
  ) {
    super(
      'ALREADY_QUEUED',
      `${markId} is already queued or running as task ${taskId} (its mark expires in ${Math.ceil(remainingMs / 1000)} s)`,
    )
  }
  /** celery-once's name for the time left, seconds. */
  get countdown(): number {
    return Math.ceil(this.remainingMs / 1000)
  }
}

/** The lock store could not be reached: the task is not run unlocked, its message goes back. */
export class LockStoreUnavailableError extends TsqError {
  override name = 'LockStoreUnavailable'
  constructor(
    readonly url: string,
    cause: unknown,
  ) {
    super('LOCK_STORE_UNAVAILABLE', `lock store ${url} unavailable: ${cause instanceof Error ? cause.message : String(cause)}`)
  }
}

/** The holder's lease was lost (taken over after it expired, or removed by an operator): told through the task's AbortSignal. */
export class LockLostError extends TsqError {
  override name = 'LockLostError'
  constructor(readonly lockId: string) {
    super('LOCK_LOST', `lock ${lockId} was lost: its lease was taken over or removed`)
  }
}

/** The fencing counter of lock `<id>` in Redis (INCR at every acquisition): the Redis store's, and the amqp:// store's when a Redis result backend counts its tokens. */
export const TOKEN_PREFIX = 'tsq:lock-token:'

/** The record of a lock `who` takes now, but for the token (each store draws its own). */
export function recordOf(id: string, who: HolderInfo, leaseMs: number, acquiredAt = Date.now()): Omit<LockRecord, 'token'> {
  return { id, holder: holderOf(who), node: who.node, pid: who.pid, task: who.task, taskId: who.taskId, acquiredAt, leaseMs }
}

/** `<node>:<pid>`, or `<node>:<pid>/<thread>` for a pool thread: what a worker names when one of its slots is lost. */
export function holderOf(who: { node: string; pid: number; thread?: number }): string {
  return who.thread === undefined ? `${who.node}:${who.pid}` : `${who.node}:${who.pid}/${who.thread}`
}
