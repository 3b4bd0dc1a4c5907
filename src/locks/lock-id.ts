// The id of a task's lock: the task's name plus an MD5 of its key, as the
// Celery cookbook's `<task>-lock-<md5>`.
import { createHash } from 'node:crypto'
import type { LockKey, TaskLockOptions, TaskOnceOptions } from './options.js'

export const DEFAULT_LOCK_TIMEOUT_S = 60
export const DEFAULT_ONCE_TIMEOUT_S = 3600

export function lockIdFor(
  taskName: string,
  options: TaskLockOptions,
  args: readonly unknown[],
  kwargs: Record<string, unknown>,
  paramNames: readonly string[] = [],
): string {
  return keyedId(taskName, 'lock', options.key, args, kwargs, paramNames)
}

/** The id of a task's `once` mark: `<task>-once-<md5 of its key>`. */
export function onceIdFor(
  taskName: string,
  options: TaskOnceOptions,
  args: readonly unknown[],
  kwargs: Record<string, unknown>,
  paramNames: readonly string[] = [],
): string {
  return keyedId(taskName, 'once', options.key, args, kwargs, paramNames)
}

function keyedId(
  taskName: string,
  kind: 'lock' | 'once',
  keyOf: LockKey | undefined,
  args: readonly unknown[],
  kwargs: Record<string, unknown>,
  paramNames: readonly string[],
): string {
  if (keyOf === undefined) return `${taskName}-${kind}`
  let key: unknown
  if (typeof keyOf === 'function') {
    key = keyOf(...args, kwargs)
  } else {
    key = keyOf.map((name) => {
      if (Object.prototype.hasOwnProperty.call(kwargs, name)) return kwargs[name]
      const at = paramNames.indexOf(name)
      return at >= 0 ? args[at] : undefined
    })
  }
  return `${taskName}-${kind}-${createHash('md5').update(stableText(key)).digest('hex')}`
}

/** The parameter names of a task function, for a `key` given as names. */
export function parameterNames(fn: (...args: any[]) => unknown): string[] {
  const text = Function.prototype.toString.call(fn)
  const m = /^[^(]*\(([^)]*)\)/.exec(text) ?? /^\s*(?:async\s+)?([A-Za-z_$][\w$]*)\s*=>/.exec(text)
  if (!m) return []
  return m[1]!
    .split(',')
    .map((p) =>
      p
        .replace(/=.*$/s, '')
        .replace(/^\s*\.\.\./, '')
        .trim(),
    )
    .filter((p) => /^[A-Za-z_$][\w$]*$/.test(p))
}

/** A string is hashed as it is (a Python client's `md5(url)` matches); anything else as sorted-key JSON. */
function stableText(value: unknown): string {
  if (typeof value === 'string') return value
  return (
    JSON.stringify(value, (_k, v: unknown) => {
      if (typeof v === 'bigint') return v.toString()
      if (v && typeof v === 'object' && !Array.isArray(v))
        return Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      return v
    }) ?? 'null'
  )
}
