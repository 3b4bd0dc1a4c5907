// The `tsq_dedup` message header: how a task says it is deduplicated, set by
// tsq's send (after the store took it, `at: 'send'`) or by any client by hand
// (a Python client's `send_task(headers={'tsq_dedup': {...}})`), for tsq
// workers to do at receipt what a tsq sender does at send. Pure.
import type { DedupMode, DedupRequest } from './rules.js'

export const DEDUP_HEADER = 'tsq_dedup'

export interface DedupHeader {
  id: string
  mode: DedupMode
  /** Seconds, as the option; null: none. */
  ttl: number | null
  extend: boolean
  replace: boolean
  /** 'send': a tsq sender took it in the store already; absent: the worker does at receipt. */
  at: 'send' | null
}

const MODES = new Set(['simple', 'throttle', 'debounce'])

/**
 * The header a message carries, read: an object (AMQP's table, Redis's JSON)
 * or a JSON string of one. null: none; a string: why it cannot be used.
 */
export function readDedupHeader(value: unknown): DedupHeader | null | string {
  if (value === undefined || value === null) return null
  let v = value
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v)
    } catch {
      return `${DEDUP_HEADER} is not JSON`
    }
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return `${DEDUP_HEADER} must be an object {id, mode, ttl}`
  const h = v as Record<string, unknown>
  const id = typeof h.id === 'number' ? String(h.id) : h.id
  if (typeof id !== 'string' || id === '') return `${DEDUP_HEADER}.id must be a non-empty string`
  const ttl = h.ttl === undefined || h.ttl === null ? null : Number(h.ttl)
  if (ttl !== null && !(ttl > 0)) return `${DEDUP_HEADER}.ttl must be a number of seconds above 0`
  const replace = h.replace === undefined || h.replace === null ? undefined : h.replace === true
  const mode = h.mode ?? (replace ? 'debounce' : ttl !== null ? 'throttle' : 'simple')
  if (typeof mode !== 'string' || !MODES.has(mode)) return `${DEDUP_HEADER}.mode must be 'simple', 'throttle' or 'debounce'`
  if (mode !== 'simple' && ttl === null) return `${DEDUP_HEADER}: mode '${mode}' needs a ttl (seconds)`
  return {
    id,
    mode: mode as DedupMode,
    ttl,
    extend: h.extend === true,
    replace: replace ?? mode === 'debounce',
    at: h.at === 'send' ? 'send' : null,
  }
}

export function dedupHeaderValue(h: DedupHeader): Record<string, unknown> {
  return { id: h.id, mode: h.mode, ttl: h.ttl, extend: h.extend, replace: h.replace, ...(h.at ? { at: h.at } : {}) }
}

/** What a worker asks the store for a message whose header no tsq sender took (at receipt), or to claim or free one. */
export function receiptRequestOf(task: string, h: DedupHeader, taskId: string, etaMs: number): DedupRequest {
  return {
    key: `${task}:${h.id}`,
    taskId,
    mode: h.mode,
    ttlMs: h.ttl === null ? null : Math.max(1, Math.round(h.ttl * 1000)),
    extend: h.extend,
    replace: h.replace,
    etaMs,
  }
}
