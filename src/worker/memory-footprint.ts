// Keeps a worker process's resident memory near what it needs at rest.
//
// Node's heap defaults suit a server that allocates steadily: under load V8
// grows the young generation to 16 MB semi-spaces, and a heap that grew in a
// burst stays grown until a major GC that an idle process may not reach for
// minutes. A worker spends most of its life idle between bursts, and operators
// size hosts by its RSS. In bench/worker-throughput (solo pool, Redis) the
// defaults left 124 MB resident after a 20,000-task burst; with both measures
// below, 73 MB, at the same rate.
import { performance } from 'node:perf_hooks'
import { getHeapStatistics, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/** Node options that already decide the young generation's size; tsq then leaves it alone. */
const YOUNG_GENERATION_OPTIONS = /--(max-semi-space-size|min-semi-space-size|semi-space-growth-factor)\b/

/**
 * Stops the young generation growing from here on (V8 takes it to 16 MB
 * semi-spaces under load), much as `--max-semi-space-size` would, unless the
 * operator chose a size in NODE_OPTIONS or node's own options. That option
 * only counts at start-up; the growth factor is read on every resize, so
 * setting it now works for a process already running (and its worker threads,
 * which share V8's flags). Scavenges get more frequent and stay as short: no
 * throughput loss in the bench.
 */
export function keepYoungGenerationSmall(execArgv: readonly string[] = process.execArgv, nodeOptions: string = process.env.NODE_OPTIONS ?? ''): boolean {
  if (YOUNG_GENERATION_OPTIONS.test(`${execArgv.join(' ')} ${nodeOptions}`)) return false
  setFlagsFromString('--semi-space-growth-factor=1')
  return true
}

export interface IdleTrimOptions {
  /** How often the event loop's utilisation is sampled. */
  intervalMs?: number
  /** Heap growth since the last collection that makes an idle moment worth a full GC. */
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
 * Collects the heap fully when the event loop goes quiet after work that grew
 * it by `growthBytes` or more, so a burst's garbage is given back while the
 * worker waits for the next one. Each check costs one utilisation sample; a
 * collection costs ~20 ms of an idle loop, and happens at most once per burst.
 * Returns the function that stops it.
 */
export function trimMemoryWhenIdle(options: IdleTrimOptions = {}): () => void {
  const collect = options.collect ?? compactingGc()
  if (!collect) return () => undefined
  const heapBytes = options.heapBytes ?? (() => getHeapStatistics().total_physical_size)
  const utilization = options.utilization ?? eventLoopUtilizationSampler()
  const growthBytes = options.growthBytes ?? 8 * 1024 * 1024
  let baseline = heapBytes()
  let worked = false
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
 * Two full GCs: the first frees the burst's objects but leaves the old
 * generation's pages in place, mostly empty; V8 picks the pages to compact
 * from what the previous marking found, so the second one moves the survivors
 * together and gives the emptied pages back (in the bench, old space 38 -> 30
 * MB after one, 38 -> 10 MB after two; ~20 ms in all).
 */
function compactingGc(): (() => void) | undefined {
  const gc = fullGc()
  return gc && (() => (gc(), gc()))
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
 */
export function fullGc(): (() => void) | undefined {
  const existing = (globalThis as { gc?: unknown }).gc
  if (typeof existing === 'function') return existing as () => void
  try {
    setFlagsFromString('--expose-gc')
    const gc: unknown = runInNewContext('gc')
    return typeof gc === 'function' ? (gc as () => void) : undefined
  } catch {
    return undefined
  } finally {
    setFlagsFromString('--no-expose-gc')
  }
}
