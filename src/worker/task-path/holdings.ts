// What the worker holds of the task messages it received, by where each one
// is: waiting for its ETA (scheduled), reserved (staged in a pool slot, or
// waiting for a slot and its rate limit), running (active); and the
// settlements still on their way to the broker. The rooms of the task path
// share it; idle() resolves when all of it is empty.
import type { LongTimeout } from '../../app/index.js'
import type { Logger } from '../../process/index.js'
import { taskLabel } from '../../protocol/index.js'
import type { Request } from './request.js'

export interface ScheduledRequest {
  request: Request
  timer: LongTimeout
}

export class Holdings {
  readonly active = new Map<string, Request>()
  readonly scheduled = new Map<string, ScheduledRequest>()
  /** Reserved and due, waiting for the pool (not handed to it yet). */
  readonly waiting: Request[] = []
  /**
   * Handed to a pool that keeps its slots fed (Pool.place) and not started
   * yet, in the order handed: still reserved (inspect reserved lists them)
   * until the pool says they started, or gives them back.
   */
  readonly staged = new Set<Request>()
  /** Reserved, waiting for a slot of its task's cluster-wide rate limit (cluster-rate.ts), not yet in `waiting`. */
  readonly limited = new Set<Request>()
  /**
   * Settlements on their way to the broker. A task's slot is free once its
   * outcome is stored; on Redis an ack is a round trip of its own, and
   * holding the slot for it made the pool run in lockstep with the broker.
   * Shutdown still waits for them.
   */
  settling = 0
  /** Tasks discarded unrun (unknown, revoked, expired) whose end is still being recorded. */
  discarding = 0
  private readonly idleWaiters: Array<() => void> = []

  constructor(private readonly log: Logger) {}

  /** Reserved: received and due, not started (staged in a pool slot first, then waiting for a cluster rate slot, then for the pool). */
  get reserved(): Request[] {
    return this.staged.size === 0 && this.limited.size === 0 ? this.waiting : [...this.staged, ...this.limited, ...this.waiting]
  }

  /** The request of that id held here: waiting for its ETA, running, or reserved. */
  held(id: string): Request | undefined {
    return this.scheduled.get(id)?.request ?? this.active.get(id) ?? this.reservedCopy(id)
  }

  /** A reserved request of that id: a scan, but the list is at most the prefetch window. */
  private reservedCopy(id: string): Request | undefined {
    for (const r of this.staged) if (r.id === id) return r
    for (const r of this.limited) if (r.id === id) return r
    for (const r of this.waiting) if (r.id === id) return r
    return undefined
  }

  /**
   * True (and logged) when the broker has taken the request's delivery back:
   * it delivers it again, to this worker or another, and this copy must not
   * run (Celery's consumer drops its reserved requests on close for the same reason).
   */
  dropIfTakenBack(request: Request): boolean {
    if (!request.takenBack) return false
    this.log.debug(`Dropped ${taskLabel(request.name, request.id)}: the broker took its delivery back and delivers it again`)
    return true
  }

  /** Resolves when no task is running or reserved, and every settlement has gone out (ETA tasks may still wait). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  private isIdle(): boolean {
    return (
      this.active.size === 0 &&
      this.waiting.length === 0 &&
      this.staged.size === 0 &&
      this.limited.size === 0 &&
      this.settling === 0 &&
      this.discarding === 0
    )
  }

  wakeIdleWaiters(): void {
    if (this.idleWaiters.length > 0 && this.isIdle()) for (const wake of this.idleWaiters.splice(0)) wake()
  }
}
