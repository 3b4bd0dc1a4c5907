// Deduplication at send, BullMQ's three modes (docs/deduplication.md), as pure
// rules over one document of entries: what a send (or a worker's receipt of a
// Python client's send) finds and leaves, what a delayed task finds when its
// ETA comes, what a finished one frees. The file:// and amqp:// stores keep
// the document (document-store.ts); the Redis store runs the same rules in Lua
// (redis-store.ts), one key per entry.

export type DedupMode = 'simple' | 'throttle' | 'debounce'

/** The send option `dedup` (and the task option of the same name, a default for its sends). */
export interface DedupOptions {
  /** The deduplication id: a string, or a function of the task's positional arguments (kwargs last). Scoped by task name. */
  id: string | ((...args: any[]) => unknown)
  /**
   * simple: while the standing task is not finished; throttle: for `ttl`;
   * debounce: the last send within `ttl` wins, each send delayed by `ttl`.
   * Default: debounce with `replace`, throttle with a `ttl`, else simple.
   */
  mode?: DedupMode
  /** Seconds the id stands (throttle and debounce: required; simple: an upper bound, default none). */
  ttl?: number
  /** A deduplicated send starts the `ttl` again (BullMQ's `extend`). */
  extend?: boolean
  /** A send replaces the standing task while that one is still delayed (BullMQ's `replace`; debounce's default). */
  replace?: boolean
}

/** One send (or receipt) as the stores take it. */
export interface DedupRequest {
  /** `<task name>:<id>`. */
  key: string
  taskId: string
  mode: DedupMode
  ttlMs: number | null
  extend: boolean
  replace: boolean
  /** When the task is due (ms since the epoch) if it is sent delayed, else 0: until then, `replace` may take it back. */
  etaMs: number
}

/** What an id stands for now. */
export interface DedupEntry {
  taskId: string
  mode: DedupMode
  etaMs: number
  /** A worker took it up at its ETA: no longer replaceable. */
  started: boolean
  /** Ms since the epoch when the id stops standing; null: until the task finishes or an operator removes it. */
  expiresAt: number | null
  since: number
}

/** A replaced task: dropped by the worker that holds it when its ETA comes. */
export interface GoneMark {
  by: string
  until: number
}

export interface DedupDocument {
  version: number
  entries: Record<string, DedupEntry>
  gone: Record<string, GoneMark>
}

export type OfferAnswer =
  /** This task stands: send it. `replaced`: the delayed task it took the place of. */
  | { stands: true; replaced: string | null }
  /** Deduplicated: `taskId` stands (for `leftMs`, null: until it finishes). */
  | { stands: false; taskId: string; leftMs: number | null }

export type ClaimAnswer = { go: true } | { go: false; by: string }

export interface DedupListing extends DedupEntry {
  key: string
  leftMs: number | null
}

/** A replaced task's mark outlives its ETA by this much: a worker that takes it late still drops it. */
export const GONE_KEEP_MS = 24 * 3600 * 1000

export function emptyDocument(): DedupDocument {
  return { version: 0, entries: {}, gone: {} }
}

/** Modes as BullMQ derives them from its options, when none is named. */
export function modeOf(o: Pick<DedupOptions, 'mode' | 'ttl' | 'replace'>): DedupMode {
  return o.mode ?? (o.replace ? 'debounce' : o.ttl !== undefined ? 'throttle' : 'simple')
}

/**
 * Checks the options and gives what a store takes, but for the task's id and ETA.
 * A function id is called with the task's positional arguments, kwargs last.
 */
export function dedupRequestOf(
  task: string,
  o: DedupOptions,
  args: readonly unknown[],
  kwargs: Record<string, unknown>,
): Omit<DedupRequest, 'taskId' | 'etaMs'> {
  if (o === null || typeof o !== 'object') throw new TypeError(`task ${task}: dedup must be an object { id, mode, ttl, extend, replace }`)
  const id = typeof o.id === 'function' ? o.id(...args, kwargs) : o.id
  if ((typeof id !== 'string' && typeof id !== 'number') || id === '')
    throw new TypeError(`task ${task}: dedup.id must be a non-empty string (or a function giving one), got ${String(id)}`)
  const mode = modeOf(o)
  if (mode !== 'simple' && mode !== 'throttle' && mode !== 'debounce')
    throw new RangeError(`task ${task}: dedup.mode must be 'simple', 'throttle' or 'debounce', got ${String(mode)}`)
  if (o.ttl !== undefined && !(typeof o.ttl === 'number' && o.ttl > 0))
    throw new RangeError(`task ${task}: dedup.ttl must be a number of seconds above 0, got ${String(o.ttl)}`)
  if (mode !== 'simple' && o.ttl === undefined) throw new RangeError(`task ${task}: dedup mode '${mode}' needs a ttl (seconds)`)
  return {
    key: `${task}:${String(id)}`,
    mode,
    ttlMs: o.ttl === undefined ? null : Math.max(1, Math.round(o.ttl * 1000)),
    extend: o.extend === true,
    replace: o.replace ?? mode === 'debounce',
  }
}

/** Drops what has expired. */
export function prune(doc: DedupDocument, now: number): void {
  for (const [key, e] of Object.entries(doc.entries)) if (e.expiresAt !== null && e.expiresAt <= now) delete doc.entries[key]
  for (const [id, g] of Object.entries(doc.gone)) if (g.until <= now) delete doc.gone[id]
}

function leftOf(e: DedupEntry, now: number): number | null {
  return e.expiresAt === null ? null : Math.max(0, e.expiresAt - now)
}

/**
 * A send: BullMQ's deduplicateJob. No entry: this task stands (for `ttl`).
 * An entry: with `replace`, a standing task still delayed (its ETA ahead, not
 * taken up) is replaced, the id keeping its time left unless `extend` (or no
 * ttl); otherwise the standing task answers, its time started again with
 * `extend` and a ttl, but never when `replace` found it already due.
 */
export function offer(doc: DedupDocument, r: DedupRequest, now: number): OfferAnswer {
  prune(doc, now)
  const current = doc.entries[r.key]
  const fresh = (expiresAt: number | null): DedupEntry => ({
    taskId: r.taskId,
    mode: r.mode,
    etaMs: r.etaMs,
    started: false,
    expiresAt,
    since: now,
  })
  const full = r.ttlMs === null ? null : now + r.ttlMs
  if (!current) {
    doc.entries[r.key] = fresh(full)
    return { stands: true, replaced: null }
  }
  // The same task again: a redelivered message taken at receipt.
  if (current.taskId === r.taskId) return { stands: true, replaced: null }
  if (r.replace) {
    if (current.etaMs > now && !current.started) {
      doc.gone[current.taskId] = { by: r.taskId, until: current.etaMs + GONE_KEEP_MS }
      doc.entries[r.key] = fresh(!r.extend && r.ttlMs !== null ? current.expiresAt : full)
      return { stands: true, replaced: current.taskId }
    }
    return { stands: false, taskId: current.taskId, leftMs: leftOf(current, now) }
  }
  if (r.extend && full !== null) current.expiresAt = full
  return { stands: false, taskId: current.taskId, leftMs: leftOf(current, now) }
}

/**
 * A delayed task's ETA came (BullMQ: promoted from delayed): a replaced one is
 * dropped; the standing one is taken up, and no later send replaces it.
 */
export function claim(doc: DedupDocument, key: string, taskId: string, now: number): ClaimAnswer {
  prune(doc, now)
  const gone = doc.gone[taskId]
  if (gone) {
    delete doc.gone[taskId]
    return { go: false, by: gone.by }
  }
  const current = doc.entries[key]
  if (current && current.taskId === taskId) current.started = true
  return { go: true }
}

/** The standing task finished (simple mode): its id is free, unless a later task stands for it now. */
export function release(doc: DedupDocument, key: string, taskId: string): boolean {
  if (doc.entries[key]?.taskId !== taskId) return false
  delete doc.entries[key]
  return true
}

export function remove(doc: DedupDocument, key: string): boolean {
  if (!doc.entries[key]) return false
  delete doc.entries[key]
  return true
}

export function listing(doc: DedupDocument, now: number): DedupListing[] {
  prune(doc, now)
  return Object.entries(doc.entries)
    .map(([key, e]) => ({ ...e, key, leftMs: leftOf(e, now) }))
    .sort((a, b) => a.key.localeCompare(b.key))
}
