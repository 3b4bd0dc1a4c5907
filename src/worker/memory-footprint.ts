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
import { setFlagsFromString } from 'node:v8'

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

// The idle trim is not the worker's alone (the dashboard holds a big heap that
// bursts of events churn), so it lives below both; the worker's callers import it from here.
export { compactingGc, fullGc, releaseNativeMemory, trimMemoryWhenIdle, type IdleTrimOptions } from '../process/index.js'
