// The app's side of the task locks (locks/): where its locks live, and the
// task option `once`, app.lock() and the worker's lock chores as calls on
// locks/ with those settings. The option `lock` itself is taken where the
// task runs (execution/locked-run.ts).
import type { App } from './app.js'
import type { Task } from './task.js'
import type { ApplyOptions } from './task-handle.js'
import { AsyncResult } from './async-result.js'
import {
  clearOnceMark as clearMark,
  heldLockOf as heldLock,
  releaseLostSlotLocks as releaseLost,
  sendDeduplicated as sendDedup,
  sendOnce as sendMarked,
  withLock,
  type AppLockOptions,
  type Lease,
  type LockSettings,
  type OnceSendOptions,
} from '../locks/index.js'

const settingsOf = new WeakMap<App, LockSettings>()

function currentSettings(app: App): LockSettings {
  const config = app.config
  const lockUrl = app.conf.lock_url
  return { lockUrl: typeof lockUrl === 'string' ? lockUrl : null, brokerUrl: config.brokerUrl, resultBackend: config.resultBackend ?? null }
}

/** Where the app's task locks and once marks live (conf.lock_url, else by broker); read once per process. */
export function lockSettings(app: App): LockSettings {
  let s = settingsOf.get(app)
  if (!s) settingsOf.set(app, (s = currentSettings(app)))
  return s
}

/** Task.applyAsync for a task with `once`: the mark first, then `send`; a graceful refusal gives the queued task's AsyncResult. */
export function sendOnce(
  app: App,
  task: Task,
  args: unknown[],
  kwargs: Record<string, unknown>,
  given: OnceSendOptions | undefined,
  taskId: string | undefined,
  send: (id: string) => Promise<AsyncResult>,
): Promise<AsyncResult> {
  return sendMarked(
    lockSettings(app),
    { name: task.name, fn: task.fn, once: task.options.once ?? {} },
    args,
    kwargs,
    given,
    taskId,
    send,
    (queued) => new AsyncResult(queued, app),
  )
}

/**
 * A send with the option `dedup`: the store says whether it stands; if so it
 * is sent (with the `tsq_dedup` header, a debounce delayed by its ttl), else
 * the standing task's AsyncResult answers.
 */
export function sendDeduplicated(
  app: App,
  name: string,
  args: unknown[],
  kwargs: Record<string, unknown>,
  options: ApplyOptions,
): Promise<AsyncResult> {
  const { dedup, ...rest } = options
  return sendDedup(
    lockSettings(app),
    name,
    args,
    kwargs,
    dedup!,
    rest,
    (extra) =>
      app.sendOwned(name, args, kwargs, {
        ...rest,
        id: extra.id,
        headers: { ...rest.headers, ...extra.headers },
        ...(extra.countdown !== undefined ? { countdown: extra.countdown } : {}),
      }),
    (standing) => new AsyncResult(standing, app),
  )
}

/** app.lock(): its settings read at each call, as app.lock() always has. */
export function withAppLock<T>(app: App, name: string, options: AppLockOptions, fn: (lease: Lease) => T | Promise<T>): Promise<T> {
  return withLock(currentSettings(app), name, options, fn)
}

/** When a task with `once` ends, however it ends, its mark goes; undefined for a task without it. */
export function clearOnceMark(
  app: App,
  run: { id: string; task: string; args: readonly unknown[]; kwargs: Record<string, unknown> },
  log: (message: string) => void,
): Promise<void> | undefined {
  const task = app.tasks.get(run.task)
  const once = task?.options.once
  if (!task || !once) return undefined
  return clearMark(lockSettings(app), { name: run.task, fn: task.fn, once }, run, log)
}

/** For `inspect active`: the lock a running task of this app holds, or null. */
export function heldLockOf(
  app: App,
  run: { id: string; name: string; args: readonly unknown[]; kwargs: Record<string, unknown> },
): Promise<{ id: string; token: number; holder: string; lease_left: number } | null> {
  const task = app.tasks.get(run.name)
  const lock = task?.options.lock
  if (!task || !lock) return Promise.resolve(null)
  return heldLock(lockSettings(app), { name: run.name, fn: task.fn, lock }, run)
}

/** In the worker's main process, when a pool process or thread is lost: frees the locks it held, if any task of the app takes one. */
export async function releaseLostSlotLocks(
  app: App,
  where: { brokerUrl: string; resultBackend: string | null },
  node: string,
  pid: number,
  log?: (message: string) => void,
  threadId?: number,
): Promise<void> {
  if ((pid === process.pid && threadId === undefined) || ![...app.tasks.values()].some((t) => t.options.lock)) return
  const lockUrl = app.conf.lock_url
  await releaseLost({ ...where, lockUrl: typeof lockUrl === 'string' ? lockUrl : null }, node, pid, log, threadId)
}
