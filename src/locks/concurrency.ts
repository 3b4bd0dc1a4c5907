// Concurrency per key, fair between keys (docs/concurrency-keys.md): at most
// `limit` runs of one key at once across the cluster, and keys take turns.
// The task option and the `task_concurrency` setting both become a
// ConcurrencyRule; a ConcurrencyStore keeps the running slots (leases with a
// fencing token) and each key's backlog (a sub-queue served round-robin).
import { codedError } from '../protocol/index.js'
import { parameterNames } from './lock-id.js'

/** The task option `concurrency`. */
export interface TaskConcurrencyOptions {
  /**
   * The key of a run: a function of the message's positional arguments and
   * kwargs (`(args, kwargs) => args[0].tenant`), or the name of an argument
   * (a kwarg, else a positional by the task function's parameter names).
   * A run whose key is null or undefined is not limited.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a key function reads into the message's arguments as it likes (`args[0].tenant`)
  key: ((args: any[], kwargs: Record<string, any>) => unknown) | string
  /** Runs of one key at once, cluster-wide. */
  limit: number
  /** Seconds of a running slot's lease, renewed every third of it: a worker killed with -9 frees its slots within it. Default 30. */
  lease?: number
  /** Slots and backlogs are kept per scope: tasks given one scope share a key's limit. Default: the task's name. */
  scope?: string
}

export const DEFAULT_CONCURRENCY_LEASE_S = 30

/** A task's concurrency limit, as the worker applies it. */
export interface ConcurrencyRule {
  task: string
  scope: string
  limit: number
  leaseMs: number
  /** The key of one message's arguments; null: not limited. Throws what the key function throws. */
  keyOf(args: unknown[], kwargs: Record<string, unknown>): string | null
}

/** A `concurrency` option or `task_concurrency` entry tsq cannot apply. */
export class ConcurrencyOptionError extends codedError('CONFIG') {}

/**
 * The rule for a task: its option first, else its `task_concurrency` entry
 * (`{ key_arg, limit, lease?, scope? }`); null when it has neither.
 */
export function concurrencyRule(
  task: string,
  fn: ((...args: any[]) => unknown) | null,
  option: TaskConcurrencyOptions | undefined,
  setting: unknown,
): ConcurrencyRule | null {
  const given = option ?? fromSetting(task, setting)
  if (!given) return null
  const where = option ? `task ${task}: concurrency` : `task_concurrency[${JSON.stringify(task)}]`
  if (!Number.isInteger(given.limit) || given.limit < 1) throw new ConcurrencyOptionError(`${where}.limit must be a whole number ≥ 1`)
  const lease = given.lease ?? DEFAULT_CONCURRENCY_LEASE_S
  if (typeof lease !== 'number' || !(lease > 0)) throw new ConcurrencyOptionError(`${where}.lease must be a number of seconds > 0`)
  const keyOf = keyFunction(where, given.key, fn)
  return { task, scope: given.scope ?? task, limit: given.limit, leaseMs: Math.round(lease * 1000), keyOf }
}

function fromSetting(task: string, setting: unknown): TaskConcurrencyOptions | undefined {
  if (setting === undefined || setting === null) return undefined
  if (typeof setting !== 'object' || Array.isArray(setting))
    throw new ConcurrencyOptionError('task_concurrency must map task names to { key_arg, limit }')
  const entry = (setting as Record<string, unknown>)[task]
  if (entry === undefined) return undefined
  if (!entry || typeof entry !== 'object')
    throw new ConcurrencyOptionError(`task_concurrency[${JSON.stringify(task)}] must be { key_arg, limit }`)
  const e = entry as Record<string, unknown>
  const keyArg = e.key_arg
  if (typeof keyArg !== 'string' && typeof keyArg !== 'number')
    throw new ConcurrencyOptionError(`task_concurrency[${JSON.stringify(task)}].key_arg must name an argument (or give its position)`)
  return {
    key: typeof keyArg === 'number' ? (args) => args[keyArg] : keyArg,
    limit: e.limit as number,
    ...(e.lease !== undefined ? { lease: e.lease as number } : {}),
    ...(typeof e.scope === 'string' ? { scope: e.scope } : {}),
  }
}

function keyFunction(
  where: string,
  key: TaskConcurrencyOptions['key'],
  fn: ((...args: any[]) => unknown) | null,
): ConcurrencyRule['keyOf'] {
  if (typeof key === 'function') return (args, kwargs) => keyText(key(args, kwargs))
  if (typeof key !== 'string' || key === '') throw new ConcurrencyOptionError(`${where}.key must be a function or an argument's name`)
  const position = fn ? parameterNames(fn).indexOf(key) : -1
  return (args, kwargs) => keyText(key in kwargs ? kwargs[key] : position >= 0 ? args[position] : undefined)
}

function keyText(value: unknown): string | null {
  if (value === null || value === undefined) return null
  return typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value)
}

/** A parked message: the task's id, the queue it came from, and kombu's envelope of it. */
export interface ParkedEntry {
  id: string
  queue: string
  envelope: string
}

export type AdmitResult = { run: true; token: number } | { run: false; duplicate: boolean }

export interface ClaimedEntry extends ParkedEntry {
  key: string
  token: number
}

/** One key of a scope: its backlog and running count. */
export interface ConcurrencyKeyStats {
  key: string
  backlog: number
  running: number
}

export interface ConcurrencyScopeStats {
  scope: string
  limit: number | null
  keys: ConcurrencyKeyStats[]
}

/**
 * Where the slots and backlogs live (Redis: concurrency-redis.ts). Every
 * verb is atomic in the store, and every one first frees the slots whose
 * lease ran out, putting back the claimed messages they held unacked.
 */
export interface ConcurrencyStore {
  /** A message straight from the broker: a slot now if its key has room and no backlog, else parked at the back of its key's sub-queue. */
  admit(rule: ConcurrencyRule, key: string, entry: ParkedEntry): Promise<AdmitResult>
  /** The next key in turn with a backlog and room: its oldest message, with a slot; null when none. */
  claim(rule: ConcurrencyRule): Promise<ClaimedEntry | null>
  /** Extends these slots' leases; returns the tokens that were lost (expired and freed). */
  renew(rule: ConcurrencyRule, tokens: number[]): Promise<number[]>
  /** Frees a slot (and forgets the claimed message it held, if still held). */
  release(rule: ConcurrencyRule, token: number): Promise<boolean>
  /** A claimed message was acked: a kill from now on loses it, as an acked message. */
  ack(rule: ConcurrencyRule, token: number): Promise<void>
  /** A claimed message goes back to the front of its key's sub-queue, and its slot is freed. */
  requeue(rule: ConcurrencyRule, token: number): Promise<void>
  /** Every scope's keys (with a backlog or a running slot); `scope` alone when given. */
  stats(scope?: string): Promise<ConcurrencyScopeStats[]>
  close(): Promise<void>
}

const REDIS_URL = /^rediss?:\/\//

/** The store's URL: conf.lock_url, else the broker, else the result backend, the first that is Redis. */
export function concurrencyUrlFor(s: { lockUrl?: string | null; brokerUrl: string; resultBackend?: string | null }): string {
  const url = [s.lockUrl, s.brokerUrl, s.resultBackend].find((u): u is string => typeof u === 'string' && REDIS_URL.test(u))
  if (!url)
    throw new ConcurrencyOptionError(
      'concurrency limits need Redis: set conf.lock_url to a redis:// URL (or use a Redis broker or result backend)',
    )
  return url
}

const stores = new Map<string, Promise<ConcurrencyStore>>()

/** One store per URL per process, ioredis loaded on first use. */
export function concurrencyStoreAt(url: string): Promise<ConcurrencyStore> {
  let store = stores.get(url)
  if (!store) {
    store = import('./concurrency-redis.js').then(({ RedisConcurrencyStore }) => new RedisConcurrencyStore(url))
    stores.set(url, store)
    store.catch(() => stores.delete(url))
  }
  return store
}

export async function closeConcurrencyStores(): Promise<void> {
  const all = [...stores.values()]
  stores.clear()
  await Promise.all(all.map((s) => s.then((store) => store.close()).catch(() => undefined)))
}
