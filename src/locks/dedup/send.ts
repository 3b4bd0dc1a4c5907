// The send option `dedup` (rules.ts): before a send, the store is asked
// whether this task stands; a deduplicated send gives the standing task's
// result instead of sending. A debounce send is delayed by its ttl unless it
// names its own countdown or ETA. The message carries the `tsq_dedup` header,
// so the worker claims a delayed one at its ETA (a replaced one is dropped)
// and frees the id when a simple-mode task finishes.
import { randomUUID } from 'node:crypto'
import { LockStoreUnavailableError } from '../lock.js'
import type { LockSettings } from '../open-store.js'
import { dedupHeaderValue, DEDUP_HEADER } from './header.js'
import { dedupRequestOf, type DedupOptions } from './rules.js'
import { openDedupStore } from './store.js'

/** What the send gives beside its own options: the task id, its header, and for a debounce its delay. */
export interface DedupSend {
  id: string
  headers: Record<string, unknown>
  /** Seconds: a debounce send that named no countdown or ETA. */
  countdown?: number
}

export async function sendDeduplicated<R>(
  settings: LockSettings,
  task: string,
  args: readonly unknown[],
  kwargs: Record<string, unknown>,
  options: DedupOptions,
  given: { id?: string; countdown?: number; eta?: Date | string },
  send: (extra: DedupSend) => Promise<R>,
  standing: (taskId: string) => R,
  now = Date.now(),
): Promise<R> {
  const r = dedupRequestOf(task, options, args, kwargs)
  const id = given.id ?? randomUUID()
  let countdown: number | undefined
  let etaMs = 0
  if (given.eta !== undefined) etaMs = new Date(given.eta).getTime()
  else if (given.countdown !== undefined) etaMs = now + given.countdown * 1000
  else if (r.mode === 'debounce') {
    countdown = r.ttlMs! / 1000
    etaMs = now + r.ttlMs!
  }
  if (!(etaMs > now)) etaMs = 0
  let answer
  let store
  try {
    store = await openDedupStore(settings)
    answer = await store.offer({ ...r, taskId: id, etaMs }, now)
  } catch (error) {
    if (error instanceof LockStoreUnavailableError) throw error
    throw new LockStoreUnavailableError((settings.lockUrl ?? settings.brokerUrl).replace(/\/\/[^@/]*@/, '//***@'), error)
  }
  if (!answer.stands) return standing(answer.taskId)
  const header = dedupHeaderValue({
    id: r.key.slice(task.length + 1),
    mode: r.mode,
    ttl: r.ttlMs === null ? null : r.ttlMs / 1000,
    extend: r.extend,
    replace: r.replace,
    at: 'send',
  })
  try {
    return await send({ id, headers: { [DEDUP_HEADER]: header }, ...(countdown !== undefined ? { countdown } : {}) })
  } catch (error) {
    // Not sent: the id is free again (a task it replaced stays replaced).
    await store.release(r.key, id).catch(() => undefined)
    throw error
  }
}
