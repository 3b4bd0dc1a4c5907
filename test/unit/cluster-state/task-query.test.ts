// The task queries read blocks and skip what cannot match or cannot make the
// page; these tests hold them to the plain answer (every task tested, all
// sorted, one slice) over random clusters and random queries.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  ClusterState,
  fold,
  matches,
  parseQuery,
  type SearchDocument,
  type TaskQuery,
  type TaskRecord,
} from '../../../src/cluster-state/index.js'

/** A small seeded generator, so a failure prints a seed that reproduces it. */
function rng(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'omega', 'payload', 'x<y>', 'Zeta']
const NAMES = ['proj.add', 'proj.mul', 'proj.Upper', 'other.task']
const WORKERS = ['celery@a', 'celery@b', 'tsq@c']

function feed(state: ClusterState, random: () => number, count: number, clock: { t: number }): string[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!
  const ids: string[] = []
  for (let i = 0; i < count; i++) {
    // Few distinct times and runtimes: ties are where orders go wrong.
    if (random() < 0.3) clock.t += 1
    const uuid = `${Math.floor(random() * 0xffffff)
      .toString(16)
      .padStart(6, '0')}-${i}`
    ids.push(uuid)
    const hostname = pick(WORKERS)
    const base = { uuid, hostname, timestamp: clock.t, local_received: clock.t }
    if (random() < 0.9)
      state.apply({
        type: 'task-received',
        name: pick(NAMES),
        args: `('${pick(WORDS)}', ${i % 13})`,
        kwargs: `{'user': '${pick(WORDS)}', 'n': ${i % 5}}`,
        ...base,
      })
    const end = random()
    if (end < 0.1) continue
    state.apply({ type: 'task-started', ...base })
    if (end < 0.2) continue
    if (end < 0.3) state.apply({ type: 'task-failed', exception: `ValueError('${pick(WORDS)}')`, ...base })
    else state.apply({ type: 'task-succeeded', result: `'${pick(WORDS)}-${i % 7}'`, runtime: Math.floor(random() * 4) / 100, ...base })
    // Now and then an old task hears again (a late event), so old blocks change too.
    if (random() < 0.05 && ids.length > 10) {
      const old = ids[Math.floor(random() * ids.length)]!
      state.apply({ type: 'task-retried', uuid: old, hostname, timestamp: clock.t, local_received: clock.t })
    }
  }
  docs = new WeakMap()
  return ids
}

// The reference's documents, made once per task between feeds (tasks change only
// when fed): building them for every query was most of this file's time.
let docs = new WeakMap<TaskRecord, SearchDocument>()

function docOf(t: TaskRecord): SearchDocument {
  let doc = docs.get(t)
  if (doc === undefined) docs.set(t, (doc = makeDoc(t)))
  return doc
}

function makeDoc(t: TaskRecord): SearchDocument {
  const f = t.fields
  const d = {
    name: fold(f.name),
    state: fold(t.state),
    worker: fold(t.worker),
    args: fold(f.args),
    kwargs: fold(f.kwargs),
    result: fold(f.result),
  }
  return {
    ...d,
    all: [fold(t.uuid), d.name, d.state, d.worker, d.args, d.kwargs, d.result].join('\0'),
    kwargsRaw: f.kwargs,
    kwargsPairs: null,
  }
}

/** Flower's search_tasks done the plain way. */
function reference(state: ClusterState, q: TaskQuery): { uuids: string[]; filtered: number } {
  const query = parseQuery(q.search)
  const all = [...state.tasks.values()].filter((t) => {
    if (q.taskname && t.fields.name !== q.taskname) return false
    if (q.workername && t.worker !== q.workername) return false
    if (q.state && t.state !== q.state) return false
    const received = t.fields.received
    if (typeof received === 'number') {
      if (q.receivedStart != null && received < q.receivedStart) return false
      if (q.receivedEnd != null && received > q.receivedEnd) return false
    }
    return matches(query, docOf(t))
  })
  const field = q.sortBy ? q.sortBy.replace(/^-/, '') : null
  const descending = q.sortBy ? q.sortBy.startsWith('-') : true
  const key = (t: TaskRecord): number | string | null => {
    if (field === null) return typeof t.fields.timestamp === 'number' ? t.fields.timestamp : 0
    if (field === 'state') return t.state.toLowerCase()
    if (field === 'worker') return t.worker
    if (field === 'uuid') return t.uuid
    if (field === 'name') return typeof t.fields.name === 'string' ? t.fields.name.toLowerCase() : null
    return typeof t.fields[field] === 'number' ? (t.fields[field] as number) : null
  }
  const cmp = (a: TaskRecord, b: TaskRecord): number => {
    const ka = key(a)
    const kb = key(b)
    let c: number
    if (ka === null && kb !== null) c = -1
    else if (kb === null && ka !== null) c = 1
    else if (ka !== null && kb !== null && ka !== kb) c = ka < kb ? -1 : 1
    else c = a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0
    return descending ? -c : c
  }
  all.sort(cmp)
  const offset = q.offset ?? 0
  return { uuids: all.slice(offset, q.limit == null ? undefined : offset + q.limit).map((t) => t.uuid), filtered: all.length }
}

function randomQuery(random: () => number, clock: number, held: number): TaskQuery {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!
  const q: TaskQuery = {}
  const sorts = [null, 'name', 'state', 'received', 'started', 'runtime', 'worker', 'uuid', 'succeeded', 'timestamp']
  const sort = pick(sorts)
  if (sort) q.sortBy = random() < 0.5 ? `-${sort}` : sort
  q.limit = pick([null, 0, 1, 5, 25, 25, 100])
  // Offsets near the start, near the end (read from the other end) and past it.
  q.offset = pick([0, 0, 3, 25, Math.floor(random() * held), held - 30, held - 1, held + 5].map((n) => Math.max(0, n)))
  if (random() < 0.2) q.taskname = pick(NAMES)
  if (random() < 0.2) q.workername = pick(WORKERS)
  if (random() < 0.2) q.state = pick(['SUCCESS', 'FAILURE', 'STARTED', 'RECEIVED', 'RETRY', 'PENDING'])
  if (random() < 0.15) q.receivedStart = clock - Math.floor(random() * 200)
  if (random() < 0.15) q.receivedEnd = clock - Math.floor(random() * 200)
  if (random() < 0.5) {
    q.search = pick([
      pick(WORDS).toLowerCase(),
      pick(WORDS).toUpperCase(),
      `${pick(WORDS)} ${pick(WORDS)}`,
      `${pick(WORDS)} OR ${pick(WORDS)}`,
      `(${pick(WORDS)} OR result:${pick(WORDS)}) AND name:proj`,
      `kwargs:user=${pick(WORDS)}`,
      `kwargs:user=${pick(WORDS)} OR args:${pick(WORDS)}`,
      `state:${pick(['success', 'failure', 'started'])}`,
      `"${pick(WORDS)}-${Math.floor(random() * 7)}"`,
      `worker:tsq ${pick(WORDS)}`,
    ])
  }
  if (random() < 0.3) q.count = false
  return q
}

function check(state: ClusterState, q: TaskQuery, seed: number): void {
  const want = reference(state, q)
  const got = state.queryTasks(q)
  const label = `seed ${seed}: ${JSON.stringify(q)}`
  assert.deepEqual(
    got.tasks.map((t) => t.uuid),
    want.uuids,
    label,
  )
  assert.equal(got.filtered, q.count === false ? null : want.filtered, label)
  assert.equal(got.total, state.tasks.size, label)
}

test('[/api/tasks] block walk, search prefilter and paging from the end give the plain answer (small pages)', () => {
  for (const seed of [1, 2, 3]) {
    const random = rng(seed)
    const clock = { t: 1_700_000_000 }
    const state = new ClusterState({ maxTasks: 700, now: () => clock.t })
    for (let round = 0; round < 4; round++) {
      feed(state, random, 500, clock)
      for (let i = 0; i < 150; i++) check(state, randomQuery(random, clock.t, state.tasks.size), seed)
    }
  }
})

test('[/api/tasks] pages past 5,000 rows (sorted at the end, or read from the other end) give the plain answer', () => {
  const seed = 7
  const random = rng(seed)
  const clock = { t: 1_700_000_000 }
  const state = new ClusterState({ maxTasks: 6_000, now: () => clock.t })
  feed(state, random, 7_000, clock)
  const held = state.tasks.size
  for (const q of [
    { limit: 25, offset: held - 25, sortBy: 'uuid' },
    { limit: 25, offset: held - 10, sortBy: '-runtime' },
    { limit: 100, offset: 5500 },
    { limit: 25, offset: 5100, sortBy: 'name', state: 'SUCCESS' },
    { limit: 25, offset: 5000, search: 'alpha' },
    { limit: 50, offset: 2000, search: 'payload OR omega', sortBy: '-received' },
    { limit: null, offset: 5_000, sortBy: 'started' },
    { limit: 25, offset: held + 1 },
  ] satisfies TaskQuery[]) {
    check(state, q, seed)
    check(state, { ...q, count: false }, seed)
  }
  for (let i = 0; i < 20; i++) check(state, randomQuery(random, clock.t, held), seed)
})
