// A task query as Flower's /api/tasks and the dashboard ask it (filters, a
// search, a sort, one page), and the plan the task table runs it by.
import { compilePrefilter, compileQuery, parseQuery } from './search.js'
import type { TaskRecord } from './records.js'
import type { SortValue, TablePlan } from './task-table.js'

export interface TaskQuery {
  limit?: number | null
  offset?: number
  sortBy?: string | null
  taskname?: string | null
  workername?: string | null
  state?: string | null
  /** Unix seconds. */
  receivedStart?: number | null
  receivedEnd?: number | null
  search?: string | null
  /** Count every match (default); Flower's /api/tasks returns the page only and need not. */
  count?: boolean
}

export interface TaskPage {
  tasks: TaskRecord[]
  /** Tasks that match, or null when the query said count: false. */
  filtered: number | null
  total: number
}

export const SORT_KEYS = new Set(['name', 'state', 'received', 'started', 'runtime', 'worker', 'uuid', 'succeeded', 'timestamp'])

/** The table's plan for a query: what filters it, the search compiled, the sort key, the page. `known` is left to the caller. */
export function tablePlan(q: TaskQuery): TablePlan {
  const query = parseQuery(q.search)
  let field = 'timestamp'
  let descending = true
  let key: (t: TaskRecord) => SortValue = defaultKey
  if (q.sortBy) {
    descending = q.sortBy.startsWith('-')
    field = q.sortBy.replace(/^-/, '')
    if (!SORT_KEYS.has(field)) throw Object.assign(new Error(`sort_by: unknown field '${field}'`), { code: 'BAD_SORT' })
    key = sortKey(field)
  }
  return {
    test: query.kind === 'all' ? null : compileQuery(query),
    prefilter: compilePrefilter(query),
    name: q.taskname || null,
    worker: q.workername || null,
    state: q.state || null,
    receivedStart: q.receivedStart ?? null,
    receivedEnd: q.receivedEnd ?? null,
    // The default order has a summary of its own: its key reads a missing timestamp as 0, not null.
    field: q.sortBy ? field : '',
    key,
    descending,
    offset: Math.max(0, q.offset ?? 0),
    limit: q.limit === null || q.limit === undefined ? null : Math.max(0, q.limit),
    count: q.count ?? true,
    known: null,
  }
}

/** The default order's key: a missing timestamp reads as 0. */
function defaultKey(t: TaskRecord): number {
  const v = t.fields.timestamp
  return typeof v === 'number' && Number.isFinite(v) ? v : 0
}

function sortKey(field: string): (t: TaskRecord) => SortValue {
  if (field === 'state') return (t) => t.state.toLowerCase()
  if (field === 'worker') return (t) => t.worker ?? null
  if (field === 'uuid') return (t) => t.uuid
  if (field === 'name') return (t) => (typeof t.fields.name === 'string' ? t.fields.name.toLowerCase() : null)
  // NaN (Python's json can send it) reads as missing: it has no place in an order.
  return (t) => {
    const v = t.fields[field]
    return typeof v === 'number' && !Number.isNaN(v) ? v : null
  }
}
