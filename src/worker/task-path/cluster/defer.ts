// Deferring a task message: the broker keeps a copy for a while (on RabbitMQ
// its delayed delivery, whole seconds; on Redis and file:// the parking lot
// DEFER_LOT, ms), then the one held here is acked, so the worker holds
// nothing past its prefetch window and takes the next. The copy comes back
// to the back of its queue, for any worker. Used by cluster rate limits
// (cluster-rate.ts) and anything else that must wait for a shared resource.
import type { Logger } from '../../../process/index.js'
import { escapeControl, taskLabel } from '../../../protocol/index.js'
import type { Headers, OutgoingMessage, Parking, Transport } from '../../../transport/index.js'
import type { Request } from '../request.js'
import type { Settler } from '../settler.js'

/** The parking lot of deferred task messages on Redis and file:// (`_tsq.parked.tsq.deferred` on Redis). */
export const DEFER_LOT = 'tsq.deferred'
/** A worker looks at the lot at least this often, so a dead worker's deferred messages still come back. */
const RELEASE_POLL_MS = 1000

export interface DeferContext {
  transport: Transport
  settler: Settler
  log: Logger
  /** Told of each parked message's time, so it is released then (Redis, file). */
  release?: DeferredRelease
}

/**
 * Defers `request`'s message by `delayMs`, releasing it from memory: a copy
 * (with `headers` set, a null one removed) is handed to the broker, confirmed, then the held
 * one is acked. False, and nothing done, where the broker cannot hold a
 * message (or the copy was refused): the caller keeps it. On RabbitMQ the
 * delay is whole seconds, rounded down (the copy may come back early; the
 * caller checks again).
 */
export async function deferMessage(
  ctx: DeferContext,
  request: Request,
  delayMs: number,
  headers: Record<string, string | number | null> = {},
): Promise<boolean> {
  const d = request.delivery
  const merged: Headers = { ...d.properties.headers }
  for (const [key, value] of Object.entries(headers)) {
    if (value === null) delete merged[key]
    else merged[key] = value
  }
  const message: OutgoingMessage = { body: d.body, properties: { ...d.properties, headers: merged } }
  const at = Date.now() + Math.max(0, delayMs)
  const transport = ctx.transport as Transport | undefined
  if (!transport?.parking && !transport?.publishDelayed) return false
  try {
    if (transport.parking) {
      await transport.parking.park(DEFER_LOT, { queue: d.queue, exchange: d.exchange, routingKey: d.routingKey }, message, at)
      ctx.release?.parked(at)
    } else await transport.publishDelayed!(d.queue, message, Math.floor(Math.max(0, delayMs) / 1000))
  } catch (error) {
    ctx.log.warning(
      `Task ${taskLabel(request.name, request.id)}: could not defer it (${escapeControl((error as Error).message)}); holding it here`,
    )
    return false
  }
  void ctx.settler.settle(request, 'delayed-on-broker')
  return true
}

/** Moves due deferred messages from the parking lot back to their queues: at each one's time, and every second. */
export class DeferredRelease {
  private timer: NodeJS.Timeout | null = null
  private nextAt = Infinity
  private running: Promise<void> | null = null
  /** A release came due while one was under way: run again after it. */
  private again = false
  private warned = false
  private stopped = false

  constructor(
    private readonly parking: Parking,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.stopped = false
    this.schedule(Date.now())
  }

  /** A message was parked for `at`. */
  parked(at: number): void {
    if (at < this.nextAt) this.schedule(at)
  }

  stop(): void {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
  }

  private schedule(at: number): void {
    if (this.stopped) return
    if (this.timer) clearTimeout(this.timer)
    this.nextAt = at
    this.timer = setTimeout(() => this.run(), Math.max(0, at - Date.now()))
    this.timer.unref()
  }

  private run(): void {
    this.timer = null
    this.nextAt = Infinity
    if (this.running) {
      this.again = true
      return
    }
    this.running = this.parking
      .releaseDue([DEFER_LOT])
      .then(
        ({ nextAt }) => {
          this.warned = false
          this.schedule(Math.min(nextAt ?? Infinity, Date.now() + RELEASE_POLL_MS, this.nextAt))
        },
        (error: Error) => {
          // Once per outage, not every second of it.
          if (!this.warned) this.log.warning(`could not release deferred tasks: ${escapeControl(error.message)}`)
          this.warned = true
          this.schedule(Math.min(Date.now() + RELEASE_POLL_MS, this.nextAt))
        },
      )
      .finally(() => {
        this.running = null
        if (this.again) {
          this.again = false
          this.schedule(Date.now())
        }
      })
  }
}
