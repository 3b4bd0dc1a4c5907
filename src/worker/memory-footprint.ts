// Keeps a worker process's memory near what it needs at rest.
//
// The figure that means something for a Node worker is its anonymous memory
// (Pss_Anon: heap, stacks, buffers; bench/worker-memory.ts), not its RSS, which
// also counts ~40 MB of node's own binary per process. Node's heap defaults
// suit a server that allocates steadily: under load V8 grows the young
// generation to 16 MB semi-spaces, and the old generation keeps the pages a
// burst filled, live objects scattered over them, until a major GC that moves
// them together, which an idle process may never reach. A worker spends most
// of its life idle between bursts. With the defaults, tsq solo held 76-78 MB
// of anonymous memory after a 20,000-task burst on Redis (118-122 MB RSS), of
// which ~13 MB was live; with the measures below, ~21 MB.
import { performance } from 'node:perf_hooks'
import { getHeapStatistics, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/** Node options that already decide the young generation's size; tsq then leaves it alone. */
const YOUNG_GENERATION_OPTIONS = /--(max-semi-space-size|min-semi-space-size|semi-space-growth-factor)\b/

/**
 * Stops the young generation growing from here on (V8 takes it to 16 MB
 * semi-spaces under load), much as `--max-semi-space-size` would, unless the
 * operator chose a size in NODE_OPTIONS or node's own options. That option
 * only counts when an isolate starts; the growth factor is read on every
 * resize, so setting it now works for a process already running. Scavenges
 * get more frequent and stay as short: no throughput loss in the bench.
 *
 * The threads pool's isolates start later, and the growth factor alone does
 * not hold theirs: Node gives a worker thread heap limits of its own, and
 * with the factor at 1 a thread's new space started at 4 MB and reached 8 MB
 * under allocation, against 1 MB in the main isolate. A 1 MB maximum, read
 * by each isolate created after this call, keeps a thread's at 2 MB
 * throughout. With it, a threads pool -c 2 held 48-50 MB of
 * anonymous memory after 5,000 tasks on Redis, against 67-68 MB without it,
 * for the same CPU per task (bench/worker-memory.ts).
 */
export function keepYoungGenerationSmall(execArgv: readonly string[] = process.execArgv, nodeOptions: string = process.env.NODE_OPTIONS ?? ''): boolean {
  if (YOUNG_GENERATION_OPTIONS.test(`${execArgv.join(' ')} ${nodeOptions}`)) return false
  setFlagsFromString('--semi-space-growth-factor=1')
  setFlagsFromString('--max-semi-space-size=1')
  return true
}

/**
 * What a prefork child starts with: a young generation sized when its isolate
 * is made, so that whatever the child loads before its first line runs (the
 * app, its libraries, tsq's own modules) cannot grow it, unless the operator
 * chose a size. With only the runtime flags set by the child's first import,
 * loading today's module graph still took each child to 4 MB of new space at
 * rest (test/e2e/worker-young-generation.test.ts).
 */
export function youngGenerationExecArgv(execArgv: readonly string[] = process.execArgv, nodeOptions: string = process.env.NODE_OPTIONS ?? ''): string[] {
  if (YOUNG_GENERATION_OPTIONS.test(`${execArgv.join(' ')} ${nodeOptions}`)) return []
  return ['--max-semi-space-size=1']
}

export interface IdleTrimOptions {
  /** How often the event loop's utilisation is sampled. */
  intervalMs?: number
  /** Heap growth since the last collection that makes an idle moment after a burst worth a full GC. */
  growthBytes?: number
  /** Replaces the full GC (tests). */
  collect?: () => void
  /** Replaces the heap's resident size (tests). */
  heapBytes?: () => number
  /** Replaces the event-loop utilisation of the last interval, 0..1 (tests). */
  utilization?: () => number
}

/** Above this share of an interval spent running callbacks, the loop was working. */
const BUSY = 0.05
/** Below it, the loop was idle. */
const QUIET = 0.01

/**
 * Collects and compacts the heap when the event loop goes quiet after work
 * that grew it by `growthBytes` or more, so a burst's garbage, and the pages
 * it spread its survivors over, are given back while the worker waits for the
 * next one. Start-up counts as such work: the first quiet moment after the
 * trimmer starts collects once, whatever the heap's size (loading the code
 * leaves garbage and half-empty pages: ~1.3 MB of a solo worker's 22 MB idle,
 * ~1.5 MB per thread of the threads pool). Each check costs one utilisation
 * sample; a collection costs 10-30 ms of an idle loop, at most once per
 * burst. Returns the function that stops it.
 */
export function trimMemoryWhenIdle(options: IdleTrimOptions = {}): () => void {
  const collect = options.collect ?? compactingGc()
  if (!collect) return () => undefined
  const heapBytes = options.heapBytes ?? (() => getHeapStatistics().total_physical_size)
  const utilization = options.utilization ?? eventLoopUtilizationSampler()
  const growthBytes = options.growthBytes ?? 4 * 1024 * 1024
  // Start-up was the first burst, and what it left is all growth.
  let baseline = Number.NEGATIVE_INFINITY
  let worked = true
  const timer = setInterval(() => {
    const share = utilization()
    if (share > BUSY) {
      worked = true
      return
    }
    if (!worked || share > QUIET) return
    worked = false
    if (heapBytes() - baseline < growthBytes) return
    collect()
    baseline = heapBytes()
  }, options.intervalMs ?? 250)
  timer.unref()
  return () => clearInterval(timer)
}

/**
 * A full GC that also compacts the whole old generation. A plain full GC
 * frees a burst's objects but leaves in place the pages they were spread
 * over, each still holding a few survivors: V8 moves objects off a page only
 * when it picks that page for compaction, from what the previous marking
 * found, and often picks none. In tsq prefork's main process after 20,000
 * tasks, old space held 50 MB of pages for 20 MB of live objects, and stayed
 * so after two full GCs. `--compact-on-every-full-gc` (read by each GC, so it
 * can be set for this one only) makes every fragmented page a candidate: in a
 * test heap with one object in 25 surviving, old space went from 55 to 5.5 MB
 * of pages, against 55 to 55 MB for a plain full GC. V8's flags are shared by
 * the worker threads: one of them collecting at the same moment compacts too
 * (a slower GC, no harm), or finds the flag already off (a plain one).
 */
export function compactingGc(): (() => void) | undefined {
  const gc = fullGc()
  return (
    gc &&
    (() => {
      setFlagsFromString('--compact-on-every-full-gc')
      try {
        gc()
      } finally {
        setFlagsFromString('--no-compact-on-every-full-gc')
      }
    })
  )
}

function eventLoopUtilizationSampler(): () => number {
  let last = performance.eventLoopUtilization()
  return () => {
    const now = performance.eventLoopUtilization()
    const share = performance.eventLoopUtilization(now, last).utilization
    last = now
    return share
  }
}

/**
 * V8's `gc()` without starting node with --expose-gc: the flag, set at run
 * time, installs `gc` in contexts created afterwards, so one throwaway context
 * hands it over (jest's leak detector does the same). The flag is turned off
 * again so that task code in later worker threads does not find a global `gc`.
 * V8's flags are per process: the threads pool's threads start together and
 * each does this, so another thread may turn the flag off between this one's
 * setting it and making its context; it then tries again (the last thread to
 * finish leaves it off).
 */
export function fullGc(): (() => void) | undefined {
  const existing = (globalThis as { gc?: unknown }).gc
  if (typeof existing === 'function') return existing as () => void
  for (let attempt = 0; attempt < 20; attempt += 1) {
    try {
      setFlagsFromString('--expose-gc')
      const gc: unknown = runInNewContext('typeof gc === "function" ? gc : undefined')
      if (typeof gc === 'function') return gc as () => void
    } catch {
      return undefined
    } finally {
      setFlagsFromString('--no-expose-gc')
    }
  }
  return undefined
}
