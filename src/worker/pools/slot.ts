// A pool slot as the worker's side of a slot pool sees it: its handle (a
// child process or a worker thread), the jobs sent to it and not ended (the
// running one first, then those staged behind it), and which slot takes the
// next job: an idle one first, else the least staged one running a short job.
import type { StateSink } from '../../app/index.js'
import type { Job, Outcome } from '../../app/index.js'
import type { LongTimeout } from '../../app/index.js'
import type { Placement } from './pool.js'
import type { FromSlot, ToSlot } from './slot-messages.js'

export interface SlotHandle {
  readonly pid: number
  /** A pool thread's id (threads share the worker's pid); absent for a process. */
  readonly threadId?: number
  /** One crossing: the messages in order. */
  send(batch: ToSlot[]): void
  kill(signal: NodeJS.Signals | number): void
  onMessage(listener: (batch: FromSlot[]) => void): void
  onExit(listener: (code: number | null, signal: string | null) => void): void
}

const noop = (): void => undefined

/** A job sent to a slot and not ended (a class: one shape for every entry, on a path taken per task). */
export class Entry {
  settle: (o: Outcome) => void = noop
  /** When it started, as the worker sees it; undefined while staged. */
  since: number | undefined = undefined
  timer: LongTimeout | undefined = undefined
  killReason: 'time-limit' | 'terminated' | undefined = undefined
  signal: string | null | undefined = undefined
  /** Asked back with 'unstage' and not answered yet: its start is not inferred meanwhile. */
  unstaging = false

  constructor(
    readonly job: Job,
    readonly timeLimit: number | null,
    readonly sink: StateSink | undefined,
    /** Absent for run(): such a job is only ever given to an idle slot. */
    readonly placement: Placement | undefined,
  ) {}
}

export interface Slot {
  index: number
  handle: SlotHandle
  ready: Promise<void>
  isReady: boolean
  /** Sent and not ended, in the order the slot runs them: queue[0] runs once started (since set), the rest are staged. */
  queue: Entry[]
  /** What goes to the slot at the next crossing. */
  outbox: ToSlot[]
  tasksRun: number
  /** Autoscale shrank the pool past this slot: it is not replaced when it exits. */
  retiring: boolean
  /** Takes no more jobs, and exits once its queue is empty and its held hooks released (to be replaced unless retiring). */
  draining: boolean
  /** Told to exit. */
  exiting: boolean
  /** The slot stopped taking jobs itself (over --max-memory-per-child): every job it has not started comes back, so none is inferred to start. */
  stopped: boolean
  /** The task whose end hooks the slot holds until the worker has stored its result (afterStored): its next job waits. */
  holding?: string
  /** Answers still due to this slot's 'unstage' requests, oldest first. */
  unstageWaiters: Array<() => void>
  /** Recent tasks' run time in seconds (moving average): how deep the slot may be staged. */
  avgRuntime: number
  /** When the slot last had a job or became ready (ms): the idle clock of idleExitMs. */
  lastActive: number
}

/** A slot whose running job started longer ago than this takes no staged jobs, and gives back those it holds. */
export const SLOW_MS = 20
/** Staged no deeper than the slot's recent tasks would run in this long (seconds). */
const STAGE_BUDGET_S = 0.005
/**
 * At most this many jobs staged behind a slot's running one. Each crossing
 * wakes the other side, and on a loaded 2-CPU machine a wake-up costs the
 * two processes a few hundred microseconds of CPU between them: with 20,000
 * noop tasks at a prefetch of 128, 64 here (against 32) halved the crossings
 * and cut the pool's CPU per task by a third. STAGE_BUDGET_S still keeps a
 * slot's staged work to a few milliseconds for any task that is not tiny.
 */
const MAX_STAGED = 64

/** How many jobs the slot may hold (running and staged) now. */
function depth(slot: Slot): number {
  const staged = slot.avgRuntime > 0 ? Math.floor(STAGE_BUDGET_S / slot.avgRuntime) : MAX_STAGED
  return 1 + Math.max(1, Math.min(MAX_STAGED, staged))
}

/**
 * A slot that takes a job now: idle first, else (stage) the least staged
 * one that is running a short job; `anySpeed`: or a long one (its staged
 * jobs come back if it stays slow). `max`: --max-tasks-per-child.
 */
export function pickSlot(slots: Iterable<Slot>, stage: boolean, anySpeed: boolean, max: number | undefined): Slot | undefined {
  let best: Slot | undefined
  const now = Date.now()
  for (const slot of slots) {
    if (!slot.isReady || slot.draining || slot.exiting || slot.retiring) continue
    const n = slot.queue.length
    if (n === 0 && !slot.holding) return slot
    if (!stage || slot.unstageWaiters.length > 0) continue
    const head = slot.queue[0]
    if (head && (head.killReason || (!anySpeed && head.since !== undefined && now - head.since > SLOW_MS))) continue
    if (n >= depth(slot) || (max && slot.tasksRun + n >= max)) continue
    if (!best || n < best.queue.length) best = slot
  }
  return best
}
