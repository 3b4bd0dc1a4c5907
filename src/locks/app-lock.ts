// app.lock(): the task locks around user code outside a task: a migration, a
// cron script. Same store, renewal, release and fencing token. The app passes
// where its locks live (app/locking.ts).
import { hostname } from 'node:os'
import { LockedError } from './lock.js'
import { tryHold } from './hold.js'
import { openLockStore, type LockSettings } from './open-store.js'
import type { AppLockOptions, Lease } from './options.js'

/** Between tries while waiting: short, so a released lock is taken soon after. */
const WAIT_STEP_MS = 100

export async function withLock<T>(
  settings: LockSettings,
  name: string,
  options: AppLockOptions,
  fn: (lease: Lease) => T | Promise<T>,
): Promise<T> {
  if (typeof name !== 'string' || name === '') throw new TypeError('app.lock(name, ...): name must be a non-empty string')
  const timeout = options.timeout ?? 60
  if (!(timeout > 0)) throw new RangeError(`app.lock(${name}): timeout must be a number of seconds above 0, got ${String(options.timeout)}`)
  const store = await openLockStore(settings)
  const leaseMs = Math.max(1, Math.round(timeout * 1000))
  const deadline = Date.now() + (options.wait ?? 0) * 1000
  const who = { node: hostname(), pid: process.pid, task: null, taskId: null }
  for (;;) {
    const got = await tryHold(store, name, leaseMs, who)
    if (got.held) {
      const held = got.held
      try {
        return await fn({ id: held.id, token: held.token, signal: held.lost })
      } finally {
        await held.release()
      }
    }
    if (Date.now() >= deadline) throw new LockedError(name, got.remainingMs)
    await new Promise((r) => setTimeout(r, Math.min(WAIT_STEP_MS, Math.max(1, deadline - Date.now()))))
  }
}
