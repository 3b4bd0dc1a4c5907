// app.lock(): the task locks around user code outside a task: a migration, a
// cron script. Same store, renewal, release and fencing token.
import { hostname } from 'node:os'
import { LockedError } from './lock.js'
import { tryHold } from './hold.js'
import { openLockStore } from './open-store.js'
import type { App, AppLockOptions, Lease } from '../app/index.js'

/** Between tries while waiting: short, so a released lock is taken soon after. */
const WAIT_STEP_MS = 100

export async function withAppLock<T>(app: App, name: string, options: AppLockOptions, fn: (lease: Lease) => T | Promise<T>): Promise<T> {
  // Read at each call, as app.lock() always has (a task's lockSettings are read once per process).
  const lockUrl = app.conf.lock_url
  const config = app.config
  const settings = { lockUrl: typeof lockUrl === 'string' ? lockUrl : null, brokerUrl: config.brokerUrl, resultBackend: config.resultBackend ?? null }
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
