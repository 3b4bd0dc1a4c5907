// Replies from one worker to two clients (tsq and celery) differ only in what
// changes from one request to the next: Lamport clocks, pids after a pool grow,
// uptime, resource usage, task counters, memory figures. normalize() replaces
// those with a marker so that the rest can be compared with deepStrictEqual.

export const VOLATILE = '<volatile>'

/** Keys whose values change between two otherwise identical requests. */
const VOLATILE_KEYS = new Set([
  'pid',
  'clock',
  'uptime',
  'rusage',
  'processes', // pool pids: pool_grow/pool_shrink change them
  'max-concurrency', // likewise
  'writes', // pool write counters
  'total', // tasks executed per name
  'time_start',
  'worker_pid',
  'timestamp',
  'utime',
  'stime',
  'maxrss',
])

/** Methods whose whole reply is a measurement. */
const VOLATILE_METHODS = new Set(['memsample', 'memdump'])

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/**
 * Non-finite floats have no JSON form: Celery prints bare Infinity (read back
 * as a string by parsePythonJson); a strict JSON writer prints null. Both mean
 * the same value here.
 */
const NON_FINITE = new Set(['Infinity', '-Infinity', 'NaN'])

function scrub(value: Json): Json {
  if (typeof value === 'string' && NON_FINITE.has(value)) return null
  if (Array.isArray(value)) return value.map(scrub)
  if (value !== null && typeof value === 'object') {
    const out: { [key: string]: Json } = {}
    for (const [k, v] of Object.entries(value)) out[k] = VOLATILE_KEYS.has(k) ? VOLATILE : scrub(v)
    return out
  }
  return value
}

function sortedIfStrings(value: Json): Json {
  // `revoked` comes from a set: its order is not part of the contract.
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return [...value].sort()
  return value
}

/** Normalizes one node's reply to `method`. */
export function normalizeReply(method: string, reply: Json): Json {
  if (VOLATILE_METHODS.has(method)) return reply === null ? null : VOLATILE
  return sortedIfStrings(scrub(reply))
}

function isObject(v: unknown): v is { [key: string]: Json } {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

/**
 * Normalizes a whole `--json` document: `{node: reply}` (inspect) or
 * `[{node: reply}, …]` (control). The shape itself is kept, so a client that
 * prints a dict where Celery prints a list still fails the comparison.
 */
export function normalize(method: string, doc: unknown): Json {
  if (Array.isArray(doc)) {
    return doc.map((entry) => (isObject(entry) ? normalizeNodes(method, entry) : (entry as Json)))
  }
  if (isObject(doc)) return normalizeNodes(method, doc)
  return doc as Json
}

function normalizeNodes(method: string, byNode: { [key: string]: Json }): Json {
  const out: { [key: string]: Json } = {}
  for (const [node, reply] of Object.entries(byNode)) out[node] = normalizeReply(method, reply)
  return out
}
