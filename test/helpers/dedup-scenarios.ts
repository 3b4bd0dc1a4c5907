// Sequences of sends with deduplication, each as BullMQ's options and as
// tsq's, with the jobs BullMQ runs (read from its deduplicateJob scripts):
// the unit test plays them on a fake clock against the rules, the
// integration test against BullMQ and a tsq worker on one Redis, side by side.
import type { DedupOptions } from '../../src/index.js'

export interface DedupScenario {
  name: string
  /** tsq's send option (its id is made unique per run). */
  dedup: Omit<DedupOptions, 'id'>
  /** BullMQ's: the `deduplication` option (ttl in ms) and the job's `delay`. */
  bull: { deduplication: { ttl?: number; extend?: boolean; replace?: boolean }; delay?: number }
  /** tsq's countdown (s) when BullMQ's delay is not the debounce's ttl. */
  countdown?: number
  /** Each send: its label and when it is made (ms from the start). */
  sends: Array<{ label: string; at: number }>
  /** How long each job runs, ms. */
  runMs: number
  /** The labels that run. */
  runs: string[]
}

export const DEDUP_SCENARIOS: DedupScenario[] = [
  {
    name: 'simple: deduplicated while the first runs, free once it finished',
    dedup: { mode: 'simple' },
    bull: { deduplication: {} },
    sends: [
      { label: 'a', at: 0 },
      { label: 'b', at: 400 },
      { label: 'c', at: 2500 },
    ],
    runMs: 1000,
    runs: ['a', 'c'],
  },
  {
    name: 'throttle: deduplicated for the ttl, whether or not the first finished',
    dedup: { mode: 'throttle', ttl: 1.5 },
    bull: { deduplication: { ttl: 1500 } },
    sends: [
      { label: 'a', at: 0 },
      { label: 'b', at: 600 },
      { label: 'c', at: 1000 },
      { label: 'd', at: 2100 },
    ],
    runMs: 50,
    runs: ['a', 'd'],
  },
  {
    name: 'throttle with extend: each duplicate starts the ttl again',
    dedup: { mode: 'throttle', ttl: 1.5, extend: true },
    bull: { deduplication: { ttl: 1500, extend: true } },
    sends: [
      { label: 'a', at: 0 },
      { label: 'b', at: 1000 },
      { label: 'c', at: 2000 },
      { label: 'd', at: 4000 },
    ],
    runMs: 50,
    runs: ['a', 'd'],
  },
  {
    name: 'debounce: the last send within the ttl replaces the delayed one; the window does not move',
    dedup: { mode: 'debounce', ttl: 1.5 },
    bull: { deduplication: { ttl: 1500, replace: true }, delay: 1500 },
    sends: [
      { label: 'a', at: 0 },
      { label: 'b', at: 500 },
      { label: 'c', at: 1000 },
      { label: 'd', at: 2000 },
    ],
    runMs: 50,
    runs: ['c', 'd'],
  },
  {
    name: 'debounce with extend: every send moves the window, so only the last runs',
    dedup: { mode: 'debounce', ttl: 1.5, extend: true },
    bull: { deduplication: { ttl: 1500, replace: true, extend: true }, delay: 1500 },
    sends: [
      { label: 'a', at: 0 },
      { label: 'b', at: 500 },
      { label: 'c', at: 1000 },
      { label: 'd', at: 2000 },
    ],
    runMs: 50,
    runs: ['d'],
  },
  {
    name: 'debounce: a send while the standing one already started is deduplicated, not replacing it',
    dedup: { mode: 'debounce', ttl: 2.5 },
    bull: { deduplication: { ttl: 2500, replace: true }, delay: 500 },
    countdown: 0.5,
    sends: [
      { label: 'a', at: 0 },
      { label: 'b', at: 1200 },
      { label: 'c', at: 3100 },
    ],
    runMs: 1000,
    runs: ['a', 'c'],
  },
]
