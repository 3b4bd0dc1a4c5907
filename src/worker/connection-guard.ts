// What the worker does around broker connection loss (the transport itself
// reconnects and replays its topology): say so in the log, optionally cancel
// late-ack tasks whose acks can no longer land (Celery 5.5's
// worker_cancel_long_running_tasks_on_connection_loss), shrink the prefetch
// window after a reconnect while old tasks still run
// (worker_enable_prefetch_count_reduction), and a watchdog that re-creates a
// consumer which receives nothing while its queue has ready messages.
import type { ConnectionRetry, Transport } from '../transport/index.js'
import type { Logger } from '../process/index.js'
import type { Request } from './task-path/request.js'
import { taskLabel } from '../protocol/index.js'

export const DEFAULT_WATCHDOG_INTERVAL_S = 10

export interface WatchedConsumer {
  readonly name: string
  /** Deliveries received so far. */
  readonly received: number
  recreate(): Promise<void>
}

export interface ConnectionGuardOptions {
  transport: Transport
  log: Logger
  cancelLongRunningOnLoss: boolean
  prefetchReduction: boolean
  activeRequests(): Request[]
  isAcksLate(request: Request): boolean
  /** Ends a running task whose message the broker will redeliver; its outcome is not recorded. */
  cancel(request: Request): void
  consumers(): WatchedConsumer[]
  /** Tasks held unacked (active + reserved + scheduled) and the prefetch window. */
  held(): number
  prefetchCount(): number
  /** The full window (multiplier × concurrency); 0 means unlimited. */
  basePrefetch(): number
  applyPrefetch(): Promise<void>
  watchdogIntervalS?: number
}

export class ConnectionGuard {
  connected = true
  /** Slots of prefetch held back after a reconnect, given back one per finished task. */
  deficit = 0
  private timer: NodeJS.Timeout | undefined
  private watching = false
  private readonly seen = new Map<string, number>()
  private readonly onLost = (error: Error) => this.lost(error)
  private readonly onRestored = () => this.restored()
  private readonly onRetry = (retry: ConnectionRetry) => this.retry(retry)

  constructor(private readonly o: ConnectionGuardOptions) {}

  start(): void {
    this.o.transport.on('connection:lost', this.onLost)
    this.o.transport.on('connection:restored', this.onRestored)
    this.o.transport.on('connection:retry', this.onRetry)
    const interval = this.o.watchdogIntervalS ?? Number(process.env.TSQ_CONSUMER_WATCHDOG_INTERVAL ?? DEFAULT_WATCHDOG_INTERVAL_S)
    if (interval > 0) {
      this.timer = setInterval(() => void this.watch(), interval * 1000)
      this.timer.unref()
    }
  }

  stop(): void {
    this.o.transport.off('connection:lost', this.onLost)
    this.o.transport.off('connection:restored', this.onRestored)
    this.o.transport.off('connection:retry', this.onRetry)
    if (this.timer) clearInterval(this.timer)
  }

  /** The prefetch window with the post-reconnect reduction applied. */
  reduce(full: number): number {
    if (full <= 0 || this.deficit <= 0) return full
    return Math.max(1, full - this.deficit)
  }

  /** A task finished: give back one slot of the reduced window. */
  taskDone(): void {
    if (this.deficit <= 0) return
    this.deficit -= 1
    if (this.deficit === 0) this.o.log.info(`The prefetch count has been restored to the maximum of ${this.o.basePrefetch()}`)
    void this.o.applyPrefetch()
  }

  private lost(error: Error): void {
    this.connected = false
    this.o.log.warning(`consumer: Connection to broker lost: ${error.message}. Trying to re-establish the connection...`)
    if (!this.o.cancelLongRunningOnLoss) return
    for (const request of this.o.activeRequests()) {
      if (request.restored || !this.o.isAcksLate(request)) continue
      this.o.log.warning(
        `Task ${taskLabel(request.name, request.id)} cannot be acknowledged after a connection loss since late acknowledgement is enabled for it.\nTerminating it instead.`,
      )
      this.o.cancel(request)
    }
  }

  /** Celery's consumer line for each failed attempt (consumer.py's CONNECTION_ERROR with CONNECTION_RETRY_STEP). */
  private retry(retry: ConnectionRetry): void {
    this.o.log.error(`consumer: Cannot connect to ${retry.url}: ${retry.reason.replace(/\.+$/, '')}.\n${retryStep(retry)}`)
  }

  private restored(): void {
    this.connected = true
    this.o.log.info(`Connected to ${this.o.transport.connectedUrl ?? this.o.transport.displayUrl}`)
    const active = this.o.activeRequests().filter((r) => !r.restored).length
    const base = this.o.basePrefetch()
    if (this.o.prefetchReduction && active > 0 && base > 0) {
      this.deficit = active
      const reduced = Math.max(1, base - active)
      this.o.log.info(
        `Temporarily reducing the prefetch count to ${reduced} to avoid over-fetching since ${active} tasks are currently being processed.\n` +
          `The prefetch count will be gradually restored to ${base} as the tasks complete processing.`,
      )
    }
    void this.o.applyPrefetch()
    this.seen.clear()
  }

  /** A consumer that got nothing for a whole interval while it had room and its queue had messages is re-created. */
  private async watch(): Promise<void> {
    // One pass at a time: passes stuck on a dead path must not all wake and warn together when it heals.
    if (!this.connected || this.watching) return
    this.watching = true
    try {
      await this.watchOnce()
    } finally {
      this.watching = false
    }
  }

  private async watchOnce(): Promise<void> {
    for (const consumer of this.o.consumers()) {
      const before = this.seen.get(consumer.name)
      this.seen.set(consumer.name, consumer.received)
      if (before === undefined || before !== consumer.received) continue
      const window = this.o.prefetchCount()
      if (window > 0 && this.o.held() >= window) continue
      try {
        const { messageCount } = await this.o.transport.declareQueue({
          name: consumer.name,
          durable: true,
          exclusive: false,
          autoDelete: false,
        })
        if (messageCount === 0 || !this.connected) continue
        this.o.log.warning(`Consumer of ${consumer.name} received nothing while ${messageCount} message(s) wait; re-creating it`)
        await consumer.recreate()
        this.seen.delete(consumer.name)
      } catch (error) {
        this.o.log.debug(`consumer watchdog (${consumer.name}): ${(error as Error).message}`)
      }
    }
  }
}

/** "Trying again in 2.00 seconds... (3)", or Celery's failover line when the next URL is tried at once. */
export function retryStep(retry: Pick<ConnectionRetry, 'attempt' | 'delayMs' | 'failover'>): string {
  if (retry.failover && retry.delayMs === 0) return 'Will retry using next failover.'
  return `Trying again in ${(retry.delayMs / 1000).toFixed(2)} seconds... (${retry.attempt})`
}
