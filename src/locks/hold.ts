// A held lock: renewed every third of its lease while its holder runs, released
// once. Used around a task's run (the worker's pool slot) and by app.lock().
import { LockLostError, type HolderInfo, type LockRecord, type LockStore } from './lock.js'

export interface HeldLock {
  readonly id: string
  readonly token: number
  readonly record: LockRecord
  /** Fires when a renewal finds the lock lost (taken over or removed). */
  readonly lost: AbortSignal
  /** Stops renewing and frees the lock (if still held); once; never throws. */
  release(): Promise<void>
  /**
   * release(), and resolves as soon as nothing this process does next can
   * overtake it: at once where the store keeps one connection's commands in
   * order (Redis: the release goes out with whatever follows it, the next
   * acquire included), else when the store has answered. What a task's run
   * waits for: one round trip less per locked task on Redis.
   */
  letGo(): Promise<void>
}

export type TryHold = { held: HeldLock } | { held: null; remainingMs: number }

export async function tryHold(
  store: LockStore,
  id: string,
  leaseMs: number,
  who: HolderInfo,
  log?: (message: string) => void,
): Promise<TryHold> {
  const got = await store.acquire(id, leaseMs, who)
  if (!got.acquired) return { held: null, remainingMs: got.remainingMs }
  return { held: new Renewing(store, got.record, log) }
}

class Renewing implements HeldLock {
  private readonly controller = new AbortController()
  private timer: NodeJS.Timeout | undefined
  private released: Promise<void> | undefined

  constructor(
    private readonly store: LockStore,
    readonly record: LockRecord,
    private readonly log?: (message: string) => void,
  ) {
    const every = Math.max(1, Math.floor(record.leaseMs / 3))
    this.timer = setInterval(() => void this.renew(), every)
    this.timer.unref()
  }

  get id(): string {
    return this.record.id
  }

  get token(): number {
    return this.record.token
  }

  get lost(): AbortSignal {
    return this.controller.signal
  }

  private async renew(): Promise<void> {
    if (this.released) return
    try {
      if (await this.store.renew(this.record)) return
      if (this.released) return
      this.stop()
      this.log?.(`Lock ${this.record.id} (token ${this.record.token}) was lost: its lease was taken over or removed`)
      this.controller.abort(new LockLostError(this.record.id))
    } catch (error) {
      // A store that is briefly unreachable: the next renewal tries again, within the lease.
      this.log?.(`Lock ${this.record.id}: renewal failed: ${(error as Error).message}`)
    }
  }

  private stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = undefined
  }

  release(): Promise<void> {
    if (this.released) return this.released
    this.stop()
    this.released = this.store.release(this.record).then(
      () => undefined,
      (error: unknown) => this.log?.(`Lock ${this.record.id}: release failed (its lease runs out instead): ${(error as Error).message}`),
    )
    return this.released
  }

  letGo(): Promise<void> {
    const released = this.release()
    // Asked after the release was sent: the connection it went out on was up.
    return this.store.releasesInOrder === true ? Promise.resolve() : released
  }
}
