// Gives a long-running process's heap back while it is idle: a compacting full
// GC once the event loop goes quiet after work that grew the heap, then glibc's
// malloc_trim. Used by the worker (and each pool process or thread) and by the
// dashboard, whose state churns through hundreds of MB under a burst of events.
// Switches: TSQ_NO_IDLE_GC, TSQ_NO_MALLOC_TRIM (bench/README.md#tricks).
import { performance } from 'node:perf_hooks'
import { getHeapStatistics, setFlagsFromString } from 'node:v8'
import { createRequire } from 'node:module'
import { runInNewContext } from 'node:vm'
import { trickOn } from '../tricks/index.js'

export interface IdleTrimOptions {
  /** How often the event loop's utilisation is sampled. */
  intervalMs?: number
  /** Heap growth since the last collection that makes an idle moment after a burst worth a full GC. */
  growthBytes?: number
  /** How long the loop must stay quiet after a burst before it is collected (start-up's needs one quiet interval). */
  settleMs?: number
  /** Replaces the full GC (tests). */
  collect?: () => void
  /** Replaces releaseNativeMemory, run after each collection (tests). */
  release?: () => void
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
 * A burst's collection waits for this much quiet: the full GC deoptimises the
 * hot path's code, which the next burst pays for again, so a pause of a second
 * or two is not idle (bench/README.md#tricks); this long is.
 */
const SETTLE_MS = 5_000

/**
 * Collects and compacts the heap when the event loop has stayed quiet for
 * `settleMs` after work that grew it by `growthBytes` or more, so a burst's
 * garbage, and the pages it spread its survivors over, are given back while
 * the worker waits for the next one. Start-up counts as such work: the first
 * quiet moment after the trimmer starts collects once, whatever the heap's
 * size, without waiting to settle (loading the code leaves garbage and
 * half-empty pages). Each check costs one utilisation sample; a collection
 * runs at most once per burst. Returns the function that stops it.
 */
export function trimMemoryWhenIdle(options: IdleTrimOptions = {}): () => void {
  const gcOn = options.collect !== undefined || trickOn('idleGc')
  if (!gcOn && options.release === undefined && !trickOn('mallocTrim')) return () => undefined
  // TSQ_NO_IDLE_GC alone: the idle moments still release malloc's free pages.
  const collect = gcOn ? (options.collect ?? compactingGc()) : () => undefined
  if (!collect) return () => undefined
  const release = options.release ?? releaseNativeMemory
  const heapBytes = options.heapBytes ?? (() => getHeapStatistics().total_physical_size)
  const utilization = options.utilization ?? eventLoopUtilizationSampler()
  const growthBytes = options.growthBytes ?? 4 * 1024 * 1024
  const intervalMs = options.intervalMs ?? 250
  const settleIntervals = Math.max(1, Math.ceil((options.settleMs ?? SETTLE_MS) / intervalMs))
  // Start-up was the first burst, and what it left is all growth; nothing is hot yet, so one quiet interval settles it.
  let baseline = Number.NEGATIVE_INFINITY
  let worked = true
  let settleFor = 1
  let quietFor = 0
  const timer = setInterval(() => {
    const share = utilization()
    if (share > BUSY) {
      worked = true
      quietFor = 0
      return
    }
    // A half-busy interval (a heartbeat, a visibility pass) neither counts towards the settle nor ends it.
    if (!worked || share > QUIET) return
    quietFor += 1
    if (quietFor < settleFor) return
    worked = false
    settleFor = settleIntervals
    quietFor = 0
    if (heapBytes() - baseline < growthBytes) return
    collect()
    release()
    baseline = heapBytes()
  }, intervalMs)
  timer.unref()
  return () => clearInterval(timer)
}

/**
 * A full GC that also compacts the whole old generation. A plain full GC
 * frees a burst's objects but leaves in place the pages they were spread
 * over, each still holding a few survivors: V8 moves objects off a page only
 * when it picks that page for compaction, and often picks none.
 * `--compact-on-every-full-gc` (read by each GC, so it can be set for this one
 * only) makes every fragmented page a candidate. V8's flags are shared by the
 * worker threads: one of them collecting at the same moment compacts too (a
 * slower GC, no harm), or finds the flag already off (a plain one).
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

type MallocTrim = (pad: number) => number
let mallocTrim: MallocTrim | null | undefined

/**
 * glibc's malloc_trim(0): hands back to the OS the free pages inside malloc's
 * arenas. A burst leaves Node's native side (socket reads, IPC and
 * structured-clone buffers, each thread's allocations) freed but still
 * mapped: glibc returns an arena's memory on its own only from the top of
 * the main arena, and keeps the arenas of threads that have exited. Called
 * through koffi, a maintained FFI library with prebuilt binaries (Node has no
 * way to call libc); where koffi or glibc is missing (macOS, musl), or
 * TSQ_NO_MALLOC_TRIM is set, this does nothing.
 */
export function releaseNativeMemory(env: NodeJS.ProcessEnv = process.env): void {
  if (!trickOn('mallocTrim', env)) return
  if (mallocTrim === undefined) mallocTrim = loadMallocTrim()
  if (mallocTrim === null) return
  try {
    mallocTrim(0)
  } catch {
    mallocTrim = null
  }
}

function loadMallocTrim(): MallocTrim | null {
  if (process.platform !== 'linux') return null
  try {
    const koffi = createRequire(import.meta.url)('koffi') as { load(path: string): { func(signature: string): MallocTrim } }
    return koffi.load('libc.so.6').func('int malloc_trim(size_t pad)')
  } catch {
    return null
  }
}
