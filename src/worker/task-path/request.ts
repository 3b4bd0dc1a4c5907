import type { TaskRequest } from '../../protocol/index.js'
import type { Delivery } from '../../transport/index.js'

const SETTLED: Promise<void> = Promise.resolve()

/** A task the worker holds: received, maybe scheduled (ETA), reserved, then active. */
export class Request {
  timeStart: number | null = null
  workerPid: number | null = null
  /** Finds the pool process running a task by id, asked when needed: the slot is chosen after run() returns. */
  pidProbe: ((taskId: string) => number | undefined) | null = null
  acknowledged = false
  settled = false
  /** Handed back to the broker by a cold shutdown: its outcome is not recorded. */
  restored = false
  /** The task's updateState() stores, in order; its end state is stored after them. */
  stateWrites: Promise<void> | null = null
  /** The pool holds the task's end hooks until the worker has stored its outcome. */
  endHooksHeld = false
  /** When the worker received it (ms), to name the delivery a broker timed out. */
  readonly receivedAt = Date.now()
  /**
   * The broker's new copy of this running task, delivered after the channel of
   * this one closed: it is settled as this one ends, instead of being run again.
   */
  successor: Delivery | null = null
  /** Its run ended by replace(sig): the replacement, under the same id, is a new task, not a second copy of this one. */
  replaced = false

  constructor(
    readonly message: TaskRequest,
    readonly delivery: Delivery,
    readonly hostname: string,
  ) {}

  get id(): string {
    return this.message.id
  }

  get name(): string {
    return this.message.task
  }

  /** The broker took its delivery back (its channel closed): it delivers the message again, and this copy must not run. */
  get takenBack(): boolean {
    return this.delivery.isLive?.() === false
  }

  get etaDate(): Date | null {
    return this.message.eta ? new Date(this.message.eta) : null
  }

  /** Celery's `Request.info()` in its exact key order; `safe` puts the reprs in args/kwargs. */
  info(safe = false): Record<string, unknown> {
    return {
      id: this.id,
      name: this.name,
      args: safe ? this.message.argsrepr : this.message.args,
      kwargs: safe ? this.message.kwargsrepr : this.message.kwargs,
      type: this.name,
      hostname: this.hostname,
      time_start: this.timeStart,
      acknowledged: this.acknowledged,
      delivery_info: {
        exchange: this.delivery.exchange,
        routing_key: this.delivery.routingKey,
        priority: this.delivery.properties.priority ?? 0,
        redelivered: this.delivery.redelivered,
      },
      worker_pid: this.pidProbe?.(this.id) ?? this.workerPid,
    }
  }

  // Not async: the delivery's own promise is handed back, one promise and
  // one turn fewer per task than wrapping it. A transport that throws
  // instead of rejecting still reaches the caller's .catch().
  ack(): Promise<void> {
    if (this.settled) return SETTLED
    this.settled = true
    this.acknowledged = true
    try {
      return this.delivery.ack()
    } catch (error) {
      return Promise.reject(error)
    }
  }

  reject(requeue: boolean): Promise<void> {
    if (this.settled) return SETTLED
    this.settled = true
    try {
      return this.delivery.reject({ requeue })
    } catch (error) {
      return Promise.reject(error)
    }
  }
}
