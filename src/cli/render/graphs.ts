// `tsq graph bootsteps` and `tsq graph workers` as Celery draws them
// (celery/bin/graph.py), over tsq's own worker: its declared bootsteps
// (src/worker/bootsteps.ts, the list Worker.start() follows) and the live
// `inspect stats` replies.
import type { NodeReply } from '../../transport/index.js'
import { bootOrder, type Bootstep } from '../../worker/bootsteps.js'
import { toDot, type DotAttrs, type DotNode } from './dot.js'

const ROOT_ATTRS: DotAttrs = { shape: 'parallelogram', color: 'slategray4', fillcolor: 'slategray3' }
const ROOT_EDGE: DotAttrs = { arrowhead: 'none', color: 'darkseagreen3' }

/** Celery marks a step that only some workers run with ∘. */
const stepLabel = (step: Bootstep) => (step.when ? `∘${step.name}` : step.name)

export function bootstepsDot(steps: readonly Bootstep[] = bootOrder()): string {
  const labels = new Map(steps.map((s) => [s.name, stepLabel(s)]))
  const root = '⧉Worker'
  const nodes: DotNode[] = [
    { id: root, scheme: {}, attrs: ROOT_ATTRS, edges: steps.map((s) => ({ to: stepLabel(s), attrs: ROOT_EDGE })) },
    ...steps.map((s) => ({ id: stepLabel(s), edges: s.requires.map((r) => ({ to: labels.get(r)! })) })),
  ]
  return toDot(nodes, { root })
}

const BROKER: DotAttrs = { shape: 'circle', fillcolor: 'cadetblue3', color: 'cadetblue4', height: 1 }
const BACKEND: DotAttrs = { shape: 'folder', width: 2, height: 1, color: 'black', fillcolor: 'peachpuff3' }
const THREAD: DotAttrs = { fillcolor: 'lightcyan4', fontcolor: 'yellow', shape: 'oval', fontsize: 10, width: 0.3, color: 'black' }
const THREAD_EDGE: DotAttrs = { arrowhead: 'none', arrowtail: 'tee' }
const WMAX = 4
const TMAX = 3

const subscript = (n: number) => String(n).replace(/\d/g, (d) => '₀₁₂₃₄₅₆₇₈₉'[Number(d)]!)

/** Celery's maybe_abbr: more than `max` items become the first ones, `X⎨…N⎬`, and the last. */
function abbreviate<T>(items: T[], name: string, max: number): Array<T | string> {
  if (!max || items.length <= max) return items
  const out: Array<T | string> = [...items.slice(0, max - 1), items[items.length - 1]!]
  out[max - 2] = `${name[0]}⎨…${subscript(items.length - (max - 1))}⎬`
  return out
}

export interface WorkerPool {
  node: string
  /** The pool's processes or threads (max-concurrency). */
  size: number
}

/** The workers and their pool sizes from `inspect stats` replies. */
export function poolsFromStats(replies: readonly NodeReply[]): WorkerPool[] {
  const pools: WorkerPool[] = []
  for (const reply of replies) {
    for (const [node, stats] of Object.entries(reply)) {
      const pool = (stats as { pool?: { 'max-concurrency'?: unknown } } | null)?.pool
      pools.push({ node, size: typeof pool?.['max-concurrency'] === 'number' ? pool['max-concurrency'] : 0 })
    }
  }
  return pools
}

export function workersDot(input: { broker: string; backend: string | null; workers: readonly WorkerPool[] }): string {
  const nodes: DotNode[] = [{ id: input.broker, attrs: BROKER, edges: [] }]
  if (input.backend) nodes.push({ id: input.backend, attrs: BACKEND, edges: [] })
  const names = abbreviate(
    input.workers.map((w) => w.node),
    'Worker',
    WMAX,
  ) as string[]
  const sizes =
    input.workers.length > WMAX
      ? [...input.workers.slice(0, WMAX - 1), input.workers.at(-1)!].map((w) => w.size)
      : input.workers.map((w) => w.size)
  let tid = 0
  names.forEach((name, i) => {
    const edges = [{ to: input.broker }, ...(input.backend ? [{ to: input.backend }] : [])]
    nodes.push({ id: name, edges })
    for (const slot of abbreviate([...Array(sizes[i] ?? 0).keys()], 'P', TMAX)) {
      tid += 1
      nodes.push({ id: `thr-${tid}`, attrs: { ...THREAD, label: String(slot) }, edges: [{ to: name, attrs: THREAD_EDGE }] })
    }
  })
  // Celery's workers graph has no root node and prints its root as Python's None.
  return toDot(nodes, { root: 'None' })
}
