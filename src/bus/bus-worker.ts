// The worker's side of an events app, in the worker's main process: it
// declares the service's topology at start, consumes the handler queues with
// their exact arguments, screens what arrives on them, settles rejected runs,
// and, where the broker has no dead-lettering (Redis, file), releases the
// retries that are due back into their handler queues.
import { decodeTaskMessage, formatIsoDate } from '../protocol/index.js'
import type { Delivery, DeliveryHandler, OutgoingMessage, Transport } from '../transport/index.js'
import { declareQueueExactly, declareTopology } from './declare.js'
import { busDescriptorOf, type BusDescriptor } from './events-app.js'
import { routeFailure, routeTarget, sendFailure, sendToArchive, usesParking } from './failures.js'
import { ARCHIVE_REASON_HEADER, ARCHIVED_AT_HEADER, isBrokerHeader, resendFromMessage } from './messages.js'
import { EVENTS_EXCHANGE, handlerQueueName, retryExchangeName } from './names.js'
import { recordService } from './registry.js'
import { archiveEnabled } from './settings.js'
import { busTopology, handlerQueueTopology } from './topology.js'

export interface BusLog {
  debug(message: string): void
  info(message: string): void
  warning(message: string): void
  error(message: string): void
}

/** How a consumed queue is declared and listed (the worker's QueueDeclaration). */
export interface HandlerQueueDeclaration {
  name: string
  exchange: string
  exchangeType: string
  routingKey: string
}

/** Bodies past this are archived unread, as the worker rejects them unread. */
const MAX_BODY_BYTES = 64 * 1024 * 1024
/** The longest a due-retry pass waits when nothing is due sooner: a retry's wait is at least 1 s, so it is never late by this. */
const RELEASE_IDLE_MS = 250
/** After an archive or retry could not be sent, the message waits this long before it goes back (no hot loop on a broken broker). */
const SEND_FAILURE_PAUSE_MS = 1000

export class BusWorker {
  private readonly queues: Map<string, string>
  private releaseTimer: NodeJS.Timeout | undefined
  private releasing: Promise<void> | undefined
  private stopped = false
  private releaseFailures = 0

  private constructor(
    readonly bus: BusDescriptor,
    private readonly transport: Transport,
    private readonly log: BusLog,
    private readonly hostname: string,
  ) {
    this.queues = new Map(bus.handlers().map((event) => [handlerQueueName(bus.service, event), event]))
  }

  /** The bus side of the worker, when its app is an events app. */
  static for(app: unknown, transport: Transport, log: BusLog, hostname: string): BusWorker | undefined {
    const bus = busDescriptorOf(app)
    return bus ? new BusWorker(bus, transport, log, hostname) : undefined
  }

  /** The handler queues a worker of this app consumes by default (no -Q): one per handled event. */
  static defaultQueues(app: unknown): HandlerQueueDeclaration[] | undefined {
    const bus = busDescriptorOf(app)
    if (!bus) return undefined
    return bus
      .handlers()
      .map((event) => ({ name: handlerQueueName(bus.service, event), exchange: EVENTS_EXCHANGE, exchangeType: 'topic', routingKey: event }))
  }

  get service(): string {
    return this.bus.service
  }

  /** True for the service's handler queues (consumed through wrap()). */
  owns(queue: string): boolean {
    return this.queues.has(queue)
  }

  /**
   * The whole topology, declared idempotently (a worker may start before or
   * after any other worker or service), then the service recorded where
   * `tsq bus ls` finds it. A queue that exists with other arguments stops
   * the start with one line (TopologyMismatchError).
   */
  async declare(): Promise<void> {
    await declareTopology(
      this.transport,
      busTopology(this.bus.service, this.bus.handlers(), this.bus.settings, { steps: !usesParking(this.transport) }),
    )
    try {
      await recordService(this.transport, { service: this.bus.service, events: this.bus.handlers(), settings: this.bus.settings })
    } catch (error) {
      this.log.warning(`bus: could not record ${this.bus.service} for \`tsq bus ls\`: ${(error as Error).message}`)
    }
  }

  /** One handler queue with its arguments and bindings (add_consumer of a handler queue). */
  async declareHandlerQueue(queue: string): Promise<void> {
    const event = this.queues.get(queue)!
    const part = handlerQueueTopology(this.bus.service, event, this.bus.settings)
    for (const e of part.exchanges) await this.transport.declareExchange(e)
    for (const q of part.queues) await declareQueueExactly(this.transport, q)
    for (const b of part.bindings) await this.transport.bindQueue(b.queue, b.exchange, b.routingKey)
  }

  /**
   * The consumer of a handler queue: a message that is not a task message, or
   * names an event this service does not handle, goes to the archive with one
   * log line (retrying it could never help); the rest go to `handler`, with a
   * delivery whose reject without requeue is settled here (see rejected()).
   */
  wrap(handler: DeliveryHandler): DeliveryHandler {
    return (delivery) => {
      const refusal = this.screen(delivery)
      if (refusal) return this.archiveRefused(delivery, refusal)
      return handler({ ...delivery, reject: (options) => (options.requeue ? delivery.reject(options) : this.rejected(delivery)) })
    }
  }

  private screen(d: Delivery): string | undefined {
    if (d.body.length > MAX_BODY_BYTES) return `not a task message: body of ${d.body.length} bytes exceeds ${MAX_BODY_BYTES}`
    if (d.properties.unreadableHeaders !== undefined)
      return `not a task message: unreadable header table: ${d.properties.unreadableHeaders}`
    let task: string
    try {
      task = decodeTaskMessage({
        headers: d.properties.headers,
        body: d.body,
        contentType: d.properties.contentType,
        contentEncoding: d.properties.contentEncoding,
      }).task
    } catch (error) {
      return `not a task message: ${(error as Error).message.split('\n')[0]}`
    }
    if (!this.bus.handlers().includes(task)) return `event ${task} is not handled by service ${this.bus.service}`
    return undefined
  }

  /** Archived as it came (the broker's death record aside), with the reason noted, then acked. */
  private async archiveRefused(d: Delivery, reason: string): Promise<void> {
    const event = this.queues.get(d.queue) ?? d.routingKey
    if (!archiveEnabled(this.bus.settings)) {
      this.log.error(`Dropped a message from ${d.queue} (${reason}): the archive is off (AMQP_EVENTS_ARCHIVED_* are 0)`)
      await d.ack().catch(() => undefined)
      return
    }
    const headers: Record<string, unknown> = {}
    if (d.properties.unreadableHeaders === undefined)
      for (const [k, v] of Object.entries(d.properties.headers ?? {})) if (!isBrokerHeader(k)) headers[k] = v
    headers[ARCHIVED_AT_HEADER] = formatIsoDate(new Date())
    headers[ARCHIVE_REASON_HEADER] = reason
    const { unreadableHeaders: _unreadable, ...properties } = d.properties
    const message: OutgoingMessage = {
      body: d.body,
      properties: { ...properties, headers: headers as OutgoingMessage['properties']['headers'], deliveryMode: 2 },
    }
    try {
      await sendToArchive(this.transport, this.bus.service, event, this.bus.settings, message)
    } catch (error) {
      this.log.error(
        `A message from ${d.queue} (${reason}) could not be archived, it goes back to the queue in ${SEND_FAILURE_PAUSE_MS / 1000} s: ${(error as Error).message}`,
      )
      await this.giveBack(d)
      return
    }
    this.log.error(
      `Archived a message from ${d.queue} to ${routeTarget(this.bus.service, { kind: 'archive', retries: 0 })}: ${reason} [tag=${d.deliveryTag}]`,
    )
    await d
      .ack()
      .catch((error: Error) =>
        this.log.warning(`ack of an archived message from ${d.queue} failed, the broker delivers it again: ${error.message}`),
      )
  }

  /**
   * A run the worker settles by rejecting it without requeue (a hard time
   * limit, a lost pool process, a Reject, a failure the handler could not
   * send on): on RabbitMQ that would dead-letter it to `S:retry` with its
   * retry count unchanged, round the ladder for ever. Instead it goes to its
   * next step (or the archive) from here, from its own bytes, then is acked;
   * if that cannot be sent, the broker's own rule applies.
   */
  private async rejected(d: Delivery): Promise<void> {
    let resend: { message: OutgoingMessage; route: ReturnType<typeof routeFailure>; event: string; id: string }
    try {
      const m = decodeTaskMessage({
        headers: d.properties.headers,
        body: d.body,
        contentType: d.properties.contentType,
        contentEncoding: d.properties.contentEncoding,
      })
      const route = routeFailure(m.retries, this.bus.maxRetriesOf(m.task), this.bus.settings)
      const now = new Date()
      const message = resendFromMessage(d, {
        retries: route.retries,
        eta: route.kind === 'retry' ? new Date(now.getTime() + route.delaySeconds * 1000) : null,
        origin: this.hostname,
        failure: {
          error: "Rejected('the run was rejected: time limit, lost pool process, Reject, or an unsent retry')",
          traceback: null,
          at: now,
        },
        ...(route.kind === 'archive' ? { archived: { at: now, reason: `failed ${route.retries} times` } } : {}),
      })
      resend = { message, route, event: m.task, id: m.id }
    } catch {
      return this.giveBack(d)
    }
    const { route, event, id, message } = resend
    if (route.kind === 'drop') {
      this.log.error(`Task ${event}[${id}] dropped after ${route.retries - 1} retries: the archive is off (AMQP_EVENTS_ARCHIVED_* are 0)`)
      return d.ack()
    }
    try {
      await sendFailure(this.transport, this.bus.service, event, this.bus.settings, route, message)
    } catch (error) {
      this.log.error(`Task ${event}[${id}] could not be sent to ${routeTarget(this.bus.service, route)}: ${(error as Error).message}`)
      return this.giveBack(d)
    }
    this.log.info(
      `Task ${event}[${id}] rejected: sent to ${routeTarget(this.bus.service, route)}${route.kind === 'retry' ? ` (retry in ${route.delaySeconds}s)` : ''}`,
    )
    return d.ack()
  }

  /** What the broker does with a reject when tsq cannot: RabbitMQ dead-letters it to `S:retry`; elsewhere it goes back to its queue. */
  private async giveBack(d: Delivery): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, SEND_FAILURE_PAUSE_MS))
    await d.reject({ requeue: usesParking(this.transport) || this.transport.kind !== 'amqp' })
  }

  /** Starts releasing due retries back into the handler queues (Redis, file); nothing to do on RabbitMQ. */
  start(): void {
    if (!usesParking(this.transport) || this.bus.settings.maxRetries === 0) return
    this.scheduleRelease(0)
  }

  private scheduleRelease(ms: number): void {
    if (this.stopped) return
    this.releaseTimer = setTimeout(() => {
      this.releasing = this.releaseDue().finally(() => (this.releasing = undefined))
    }, ms)
  }

  private async releaseDue(): Promise<void> {
    const lots = Array.from({ length: this.bus.settings.maxRetries }, (_, step) => retryExchangeName(this.bus.service, step))
    let next = RELEASE_IDLE_MS
    try {
      const { moved, nextAt } = await this.transport.parking!.releaseDue(lots)
      if (moved > 0) this.log.debug(`bus: ${moved} retried event(s) of ${this.bus.service} back in their handler queues`)
      if (nextAt !== null) next = Math.min(RELEASE_IDLE_MS, Math.max(0, nextAt - Date.now()))
      this.releaseFailures = 0
    } catch (error) {
      this.releaseFailures += 1
      if (this.releaseFailures === 1)
        this.log.warning(`bus: could not release due retries of ${this.bus.service}: ${(error as Error).message}`)
      next = 1000
    }
    this.scheduleRelease(next)
  }

  async stop(): Promise<void> {
    this.stopped = true
    if (this.releaseTimer) clearTimeout(this.releaseTimer)
    await this.releasing?.catch(() => undefined)
  }
}
