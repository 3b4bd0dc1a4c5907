// The held tasks in arrival order, cut into blocks of BLOCK, for the task
// queries (Flower's search_tasks: filter, search, sort, one page). A query
// must answer in a few milliseconds with 100,000 tasks held while events
// keep arriving, so it never scans what it can rule out by block:
//  - each block keeps its tasks in order per sort field asked for, so a page
//    walks the blocks best first and stops at the first block that cannot
//    beat the page's last row (a page of 25 reads a few blocks), and within a
//    block at its first task that cannot;
//  - each block keeps its tasks' search texts joined, and the hashed 4-grams
//    of that text, so a search term rules a block out without a scan.
// Both are rebuilt on demand when the block changed since (a version count
// that every event on one of its tasks bumps): older blocks, whose tasks
// finished, stay as they were. No I/O.
import { fold, type Prefilter, type SearchDocument } from './search.js'
import type { TaskRecord } from './records.js'

const BLOCK = 128
/** A page beyond this many rows is sorted at the end, not kept in order row by row. */
const BOUNDED_PAGE = 5000

export type SortValue = number | string | null

/** A block's live tasks in one field's ascending order, with their keys. */
interface Ranked {
  version: number
  tasks: TaskRecord[]
  keys: SortValue[]
}

/**
 * Bits of the joined text's 4-grams (hashed): a term with a 4-gram whose bit
 * is clear is not in the block. Four characters, not three: the uuids in every
 * block hold nearly every short run of hex digits and dashes, so trigrams of
 * a term such as `payload-99000` were in most blocks.
 */
const GRAM_BITS = 1 << 16

export interface Block {
  tasks: (TaskRecord | null)[]
  live: number
  version: number
  joinedVersion: number
  joined: string
  grams: Uint32Array | null
  ranked: Map<string, Ranked>
}

/** What a query asks of each task, and of the order. */
export interface TablePlan {
  /** The search, as a test of one task's document and as a test of a block's joined text. */
  test: ((doc: SearchDocument) => boolean) | null
  prefilter: Prefilter | null
  name: string | null
  worker: string | null
  state: string | null
  receivedStart: number | null
  receivedEnd: number | null
  /** The sort field's name (an order kept per block per name) and how to read it. */
  field: string
  key: (t: TaskRecord) => SortValue
  descending: boolean
  offset: number
  limit: number | null
  /** Count every match (the table's "of N"); without it the walk stops once the page is known. */
  count: boolean
  /** The number of matches when the caller knows it already (from its filter indexes). */
  known: number | null
}

export interface TableResult {
  tasks: TaskRecord[]
  /** Matches in all, or null when not counted. */
  filtered: number | null
}

/** Flower's order: tasks without the field first (ascending), ties broken by uuid. */
export function compare(a: SortValue, b: SortValue, ua: string, ub: string): number {
  if (a !== b) {
    if (a === null) return -1
    if (b === null) return 1
    return a < b ? -1 : 1
  }
  return ua < ub ? -1 : ua > ub ? 1 : 0
}

export function documentOf(task: TaskRecord): SearchDocument {
  const f = task.fields
  const name = fold(f.name)
  const state = fold(task.state)
  const worker = fold(task.worker)
  const args = fold(f.args)
  const kwargs = fold(f.kwargs)
  const result = fold(f.result)
  // One literal with every field (not a spread): many of these are read per
  // search, and the spread's objects were several times slower to read.
  return {
    name,
    state,
    worker,
    args,
    kwargs,
    result,
    all: [fold(task.uuid), name, state, worker, args, kwargs, result].join('\0'),
    kwargsRaw: f.kwargs,
    kwargsPairs: null,
  }
}

export class TaskTable {
  private blocks: Block[] = []
  private live = 0

  get size(): number {
    return this.live
  }

  add(task: TaskRecord): void {
    let block = this.blocks[this.blocks.length - 1]
    if (!block || block.tasks.length === BLOCK) {
      block = { tasks: [], live: 0, version: 0, joinedVersion: -1, joined: '', grams: null, ranked: new Map() }
      this.blocks.push(block)
    }
    task.slot = block.tasks.length
    task.block = block
    block.tasks.push(task)
    block.live += 1
    block.version += 1
    this.live += 1
  }

  /** The task changed: its block's texts and edges are read again when next needed. */
  touch(task: TaskRecord): void {
    if (task.block) task.block.version += 1
  }

  remove(task: TaskRecord): void {
    const block = task.block
    if (!block) return
    block.tasks[task.slot] = null
    block.live -= 1
    block.version += 1
    task.block = null
    this.live -= 1
    if (block.live === 0) {
      // Tasks leave oldest first, so the empty block is nearly always the first.
      const at = this.blocks[0] === block ? 0 : this.blocks.indexOf(block)
      if (at === 0) this.blocks.shift()
      else if (at > 0) this.blocks.splice(at, 1)
    } else if (this.blocks.length * BLOCK > 2 * this.live + 4 * BLOCK) this.repack()
  }

  /**
   * Blocks left sparse by tasks that left from their middle (the running
   * kept while the finished around them went) are packed again, in order,
   * when they hold twice the slots needed: at most once per as many removals.
   */
  private repack(): void {
    const old = this.blocks
    this.blocks = []
    this.live = 0
    for (const block of old) for (const task of block.tasks) if (task) this.add(task)
  }

  /** Joins the texts of changed blocks, newest first, until `budgetMs` has passed. */
  warm(budgetMs: number): void {
    const until = performance.now() + budgetMs
    for (let i = this.blocks.length - 1; i >= 0; i--) {
      const block = this.blocks[i]!
      if (block.joinedVersion === block.version) continue
      this.joinedOf(block)
      if (performance.now() > until) return
    }
  }

  private joinedOf(block: Block): string {
    if (block.joinedVersion === block.version) return block.joined
    const docs: SearchDocument[] = []
    for (const task of block.tasks) if (task) docs.push((task.doc ??= documentOf(task)))
    const joined = docs.map((d) => d.all).join('\u0001')
    // Each document's text becomes a slice of the joined one: V8 keeps such a
    // slice as a view, so the texts are held once, not twice.
    let at = 0
    for (const doc of docs) {
      const end = at + doc.all.length
      doc.all = joined.slice(at, end)
      at = end + 1
    }
    block.joined = joined
    block.grams = gramBits(joined)
    block.joinedVersion = block.version
    return joined
  }

  /** Could the block hold a match? Its 4-gram bits first (no scan), then its joined text. */
  private mayMatch(block: Block, p: TablePlan): boolean {
    if (p.prefilter === null) return true
    const joined = this.joinedOf(block)
    return p.prefilter((term) => hasGrams(block.grams!, term) && joined.includes(term))
  }

  private rankedOf(block: Block, field: string, key: (t: TaskRecord) => SortValue): Ranked {
    const cached = block.ranked.get(field)
    if (cached && cached.version === block.version) return cached
    const live: TaskRecord[] = []
    const keyOf: SortValue[] = []
    for (const task of block.tasks) {
      if (!task) continue
      live.push(task)
      keyOf.push(key(task))
    }
    const order = live.map((_, i) => i)
    order.sort((a, b) => compare(keyOf[a]!, keyOf[b]!, live[a]!.uuid, live[b]!.uuid))
    const ranked = { version: block.version, tasks: order.map((i) => live[i]!), keys: order.map((i) => keyOf[i]!) }
    block.ranked.set(field, ranked)
    return ranked
  }

  /** Does the task pass the plan's filters and search? */
  private matches(task: TaskRecord, p: TablePlan): boolean {
    if (p.state !== null && task.state !== p.state) return false
    if (p.name !== null && task.fields.name !== p.name) return false
    if (p.worker !== null && task.worker !== p.worker) return false
    if (p.receivedStart !== null || p.receivedEnd !== null) {
      const received = task.fields.received
      if (typeof received === 'number') {
        if (p.receivedStart !== null && received < p.receivedStart) return false
        if (p.receivedEnd !== null && received > p.receivedEnd) return false
      }
    }
    return p.test === null || p.test((task.doc ??= documentOf(task)))
  }

  /** The plan over every held task, block by block, best block first. */
  query(p: TablePlan): TableResult {
    const filtering =
      p.test !== null || p.name !== null || p.worker !== null || p.state !== null || p.receivedStart !== null || p.receivedEnd !== null
    let counted: number | null = filtering ? p.known : this.live
    // A page nearer the end than the start is the same page from the other
    // end: the last 25 of 100,000 keep 25 rows in order, not 100,000.
    if (p.limit !== null && p.offset + p.limit > BOUNDED_PAGE) {
      counted ??= this.count(p)
      if (p.offset >= counted) return { tasks: [], filtered: counted }
      const after = counted - p.offset
      if (after < p.offset + p.limit) {
        const from = Math.max(0, after - p.limit)
        const rows = this.walk({ ...p, descending: !p.descending, offset: from, limit: after - from, count: false })
        return { tasks: rows.tasks.reverse(), filtered: counted }
      }
    }
    const rows = this.walk({ ...p, count: p.count && counted === null })
    return { tasks: rows.tasks, filtered: counted ?? rows.filtered }
  }

  private count(p: TablePlan): number {
    let n = 0
    for (const block of this.blocks) {
      if (!this.mayMatch(block, p)) continue
      for (const task of block.tasks) if (task && this.matches(task, p)) n += 1
    }
    return n
  }

  private walk(p: TablePlan): TableResult {
    const k = p.limit === null ? null : p.offset + p.limit
    const select = new TopK(k, p.key, p.descending)
    let filtered = 0
    const sign = p.descending ? -1 : 1
    // Each block in the page's order, and the blocks by their best task: once
    // the page is full, a block whose best would not make it ends the walk
    // (every later block is worse still), and within a block the first task
    // that would not make it ends the block.
    const order = this.blocks.map((block) => {
      const r = this.rankedOf(block, p.field, p.key)
      const at = p.descending ? r.tasks.length - 1 : 0
      return { r, key: r.keys[at]!, uuid: r.tasks[at]!.uuid }
    })
    order.sort((a, b) => sign * compare(a.key, b.key, a.uuid, b.uuid))
    for (const { r, key, uuid } of order) {
      if (!select.admits(key, uuid) && !p.count) break
      if (!this.mayMatch(r.tasks[0]!.block!, p)) continue
      const n = r.tasks.length
      for (let i = 0; i < n; i++) {
        const at = p.descending ? n - 1 - i : i
        const task = r.tasks[at]!
        if (!this.matches(task, p)) continue
        filtered += 1
        if (select.admits(r.keys[at]!, task.uuid)) select.offer(task)
        else if (!p.count) break
      }
    }
    return { tasks: page(select.result(), p), filtered: p.count ? filtered : null }
  }
}

function page(ordered: TaskRecord[], p: TablePlan): TaskRecord[] {
  return ordered.slice(p.offset, p.limit === null ? undefined : p.offset + p.limit)
}

/**
 * The first `k` tasks in order, offered one at a time: a sorted window of k
 * (binary insertion) when k is small, a full sort at the end otherwise.
 */
class TopK {
  private readonly items: TaskRecord[] = []
  private readonly keys: SortValue[] = []
  private readonly sign: number
  private readonly bounded: boolean

  constructor(
    private readonly k: number | null,
    private readonly key: (t: TaskRecord) => SortValue,
    descending: boolean,
  ) {
    this.sign = descending ? -1 : 1
    this.bounded = k !== null && k <= BOUNDED_PAGE
  }

  /** Could a task with this key and uuid still be among the first k? */
  admits(key: SortValue, uuid: string): boolean {
    if (this.k === 0) return false
    const n = this.items.length
    if (this.k === null || !this.bounded || n < this.k) return true
    return this.sign * compare(key, this.keys[n - 1]!, uuid, this.items[n - 1]!.uuid) < 0
  }

  offer(task: TaskRecord): void {
    if (this.k === 0) return
    const k = this.key(task)
    if (!this.bounded) {
      this.items.push(task)
      this.keys.push(k)
      return
    }
    const n = this.items.length
    if (n === this.k && this.sign * compare(k, this.keys[n - 1]!, task.uuid, this.items[n - 1]!.uuid) >= 0) return
    let lo = 0
    let hi = n
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (this.sign * compare(this.keys[mid]!, k, this.items[mid]!.uuid, task.uuid) <= 0) lo = mid + 1
      else hi = mid
    }
    this.items.splice(lo, 0, task)
    this.keys.splice(lo, 0, k)
    if (this.items.length > this.k!) {
      this.items.pop()
      this.keys.pop()
    }
  }

  result(): TaskRecord[] {
    if (this.bounded) return this.items
    const order = this.items.map((_, i) => i)
    order.sort((a, b) => this.sign * compare(this.keys[a]!, this.keys[b]!, this.items[a]!.uuid, this.items[b]!.uuid))
    if (this.k !== null) order.length = Math.min(order.length, this.k)
    return order.map((i) => this.items[i]!)
  }
}

const gramOf = (s: string, i: number): number =>
  (Math.imul((s.charCodeAt(i) << 24) ^ (s.charCodeAt(i + 1) << 16) ^ (s.charCodeAt(i + 2) << 8) ^ s.charCodeAt(i + 3), 0x9e3779b1) >>> 16) &
  (GRAM_BITS - 1)

function gramBits(text: string): Uint32Array {
  const bits = new Uint32Array(GRAM_BITS >>> 5)
  for (let i = 0; i + 3 < text.length; i++) {
    const h = gramOf(text, i)
    bits[h >>> 5]! |= 1 << (h & 31)
  }
  return bits
}

/** False when some 4-gram of the term is surely not in the text (a term under 4 characters has none to rule on). */
function hasGrams(bits: Uint32Array, term: string): boolean {
  for (let i = 0; i + 3 < term.length; i++) {
    const h = gramOf(term, i)
    if ((bits[h >>> 5]! & (1 << (h & 31))) === 0) return false
  }
  return true
}
