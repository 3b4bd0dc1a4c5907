// What a service's module imports to use the events bus (celery-amqp-events'
// EventsCelery): `createEventsApp(service)`, `app.event(name, validate)` to
// fire, `app.handler(name, fn)` to handle. An events app is an App: its
// handlers are Celery tasks named as their events, run by `tsq worker`.
import { isAbsolute, resolve as resolvePath } from 'node:path'
import { fileURLToPath } from 'node:url'
import { App, type AppOptions, type TaskOptions, currentTask, Ignore, Reject, taskPredicate, type TaskContext } from '../app/index.js'
import { clientOrigin, sendTask } from '../client/index.js'
import type { Transport } from '../transport/index.js'
import { declareTopology } from './declare.js'
import { routeFailure, routeTarget, sendFailure } from './failures.js'
import { failureNote, resendFromContext } from './messages.js'
import { checkEventName, checkServiceName, EVENTS_EXCHANGE } from './names.js'
import { resolveBusSettings, type BusSettings, type BusSettingsInput } from './settings.js'
import { busTopology } from './topology.js'

/** The library's AMQP_EVENTS_CONFIG, as `inspect conf` reports it (an option given in `conf` wins). */
export const EVENTS_APP_CONF: Readonly<Record<string, unknown>> = Object.freeze({
  task_default_exchange: EVENTS_EXCHANGE,
  task_default_exchange_type: 'topic',
  task_default_queue: 'events',
  task_default_routing_key: 'events',
  task_acks_late: true,
  task_acks_on_failure_or_timeout: false,
  task_reject_on_worker_lost: true,
  broker_transport_options: { confirm_publish: true },
})

export interface EventsAppOptions extends Omit<AppOptions, 'name'>, BusSettingsInput {
  /**
   * Modules that register this service's handlers (Celery's `imports`): the
   * worker loads them after the app module, in every pool process. A path
   * (resolved from the working directory, as -I), or a file URL:
   * `new URL('./handlers.js', import.meta.url)`.
   */
  imports?: Array<string | URL>
}

export interface HandlerOptions extends Pick<TaskOptions, 'timeLimit' | 'softTimeLimit' | 'rateLimit' | 'bind' | 'trackStarted'> {
  /** Retries before the event goes to the archive (default: the service's maxRetries, AMQP_EVENTS_MAX_RETRIES). */
  maxRetries?: number
}

/** An event function: validates (its body may throw), then fires; resolves with the event's id once the broker has it. */
export interface EventFunction<A extends unknown[] = unknown[]> {
  (...args: A): Promise<string>
  readonly eventName: string
  readonly app: EventsApp
  /** Fires with keyword arguments too (a Python handler's `**kwargs`), after the same validation. */
  fire(args: A, kwargs?: Record<string, unknown>): Promise<string>
  /** Registers this service's handler of the event (the library's `event.handler`). */
  handler(fn: (...args: any[]) => unknown, options?: HandlerOptions): void
}

/**
 * What the worker reads from an events app (through a registry symbol, not
 * instanceof: the worker's bundled copy of this module is not the one a
 * service's module imports as 'tsq').
 */
export interface BusDescriptor {
  readonly service: string
  readonly settings: BusSettings
  /** The events this service handles. */
  handlers(): string[]
  /** A handler's retry limit. */
  maxRetriesOf(event: string): number
  /** The `imports` modules, as absolute paths. */
  imports(): string[]
}

const BUS = Symbol.for('tsq.eventsBus')

/** The bus side of `app`, when it is an events app (from any copy of tsq). */
export function busDescriptorOf(app: unknown): BusDescriptor | undefined {
  if (!app || typeof app !== 'object') return undefined
  const descriptor = (app as Record<symbol, unknown>)[BUS] as BusDescriptor | undefined
  return descriptor && typeof descriptor.service === 'string' && typeof descriptor.handlers === 'function' ? descriptor : undefined
}

function importPath(spec: string | URL): string {
  if (spec instanceof URL) return fileURLToPath(spec)
  if (spec.startsWith('file:')) return fileURLToPath(spec)
  return isAbsolute(spec) ? spec : resolvePath(process.cwd(), spec)
}

/** ctx.retry() from a handler: the RetryRequest of whichever copy of tsq built the context. */
function retryRequestOf(error: unknown): { countdown?: number; maxRetries?: number; exc?: Error } | undefined {
  const e = error as { code?: unknown; options?: unknown } | null
  if (!e || typeof e !== 'object' || e.code !== 'RETRY' || typeof e.options !== 'object' || e.options === null) return undefined
  return e.options as { countdown?: number; maxRetries?: number; exc?: Error }
}

export class EventsApp extends App {
  readonly service: string
  readonly settings: BusSettings
  private readonly handled = new Map<string, { maxRetries: number }>()
  private readonly importSpecs: Array<string | URL>

  constructor(service: string, options: EventsAppOptions = {}) {
    const { maxRetries, archiveTtl, archiveMaxLength, imports, conf, ...appOptions } = options
    checkServiceName(service)
    super({ ...appOptions, name: service, conf: { ...EVENTS_APP_CONF, ...conf } })
    this.service = service
    this.settings = resolveBusSettings({ maxRetries, archiveTtl, archiveMaxLength })
    this.importSpecs = [...(imports ?? [])]
    const descriptor: BusDescriptor = {
      service,
      settings: this.settings,
      handlers: () => [...this.handled.keys()],
      maxRetriesOf: (event) => this.handled.get(event)?.maxRetries ?? this.settings.maxRetries,
      imports: () => this.importSpecs.map(importPath),
    }
    Object.defineProperty(this, BUS, { value: descriptor })
    // A process about to run handlers (a pool slot, or the solo worker) opens its producer
    // connection now, so a handler's first retry is not late by its set-up (100-200 ms).
    this.on('worker_process_init', async () => {
      if (this.handled.size > 0) await this.warmUp().catch(() => undefined)
    })
  }

  /**
   * Opens the producer connection and, on RabbitMQ, its confirm channel: an
   * empty message to the default exchange with no routing key, which no queue
   * can have and RabbitMQ drops (confirmed all the same).
   */
  private async warmUp(): Promise<void> {
    const transport = await this.transport()
    if (transport.kind !== 'amqp') return
    await transport.publish('', '', {
      body: Buffer.alloc(0),
      properties: { contentType: 'application/octet-stream', contentEncoding: 'binary', headers: {}, deliveryMode: 1, priority: 0 },
    })
  }

  /** The events this service handles. */
  get handlers(): string[] {
    return [...this.handled.keys()]
  }

  /**
   * Declares an event: `validate` runs first with the call's arguments and may
   * throw (or reject) to refuse the event before anything is sent; then the
   * event goes to the `events` exchange under its name, confirmed.
   */
  event<A extends unknown[] = unknown[]>(name: string, validate?: (...args: A) => unknown): EventFunction<A> {
    checkEventName(name, 'app.event()')
    const fire = async (args: A, kwargs: Record<string, unknown> = {}): Promise<string> => {
      if (validate) await validate(...args)
      return this.fire(name, args, kwargs)
    }
    const fn = ((...args: A) => fire(args)) as EventFunction<A>
    Object.defineProperties(fn, {
      eventName: { value: name },
      app: { value: this },
      fire: { value: fire },
      handler: { value: (handlerFn: (...args: any[]) => unknown, options?: HandlerOptions) => this.handler(name, handlerFn, options) },
    })
    return fn
  }

  /**
   * Registers this service's handler of `event`: a Celery task named as the
   * event, consumed from the queue `<service>.<event>`. It runs late-acked;
   * whatever it throws sends the event to the next retry step, and past
   * `maxRetries` to the archive, each confirmed before the message is acked.
   */
  handler(event: string, fn: (...args: any[]) => unknown, options: HandlerOptions = {}): void {
    checkEventName(event, 'app.handler()')
    if (typeof fn !== 'function') throw new TypeError(`app.handler(${JSON.stringify(event)}): expected a function`)
    if (this.handled.has(event)) throw new Error(`event handler already registered: ${event} in service ${this.service}`)
    const { maxRetries = this.settings.maxRetries, ...taskOptions } = options
    if (!Number.isInteger(maxRetries) || maxRetries < 0)
      throw new TypeError(`app.handler(${JSON.stringify(event)}): maxRetries must be a whole number of 0 or more`)
    this.handled.set(event, { maxRetries })
    const run = async (...args: unknown[]): Promise<unknown> => {
      try {
        return await fn(...args)
      } catch (error) {
        // Ignore and Reject keep their meaning; a retry() asks for a step by its countdown.
        if (taskPredicate(error)) throw error
        const retry = retryRequestOf(error)
        await this.handleFailure(currentTask(), retry?.exc ?? error, retry?.maxRetries ?? maxRetries, retry?.countdown)
        throw new Ignore('sent to the retry steps or the archive')
      }
    }
    this.task(event, run, {
      ...taskOptions,
      maxRetries,
      acksLate: true,
      rejectOnWorkerLost: true,
      acksOnFailureOrTimeout: false,
      ignoreResult: true,
    })
  }

  /**
   * Fires `event` without a validating function (what `tsq fire` and
   * Python's `send_task(E, args, routing_key=E)` to `events` do): declares
   * this service's topology once per connection, then publishes, confirmed.
   */
  async fire(event: string, args: unknown[] = [], kwargs: Record<string, unknown> = {}): Promise<string> {
    checkEventName(event, 'fire()')
    const transport = await this.transport()
    await this.declareTopology(transport)
    return fireEvent(transport, event, args, kwargs, { replyTo: this.replyTo(), signals: this.signals })
  }

  /** This service's exchanges and queues, declared (idempotently) through `transport`. */
  declareTopology(transport: Transport): Promise<void> {
    return declareTopology(transport, busTopology(this.service, this.handlers, this.settings, { steps: transport.kind === 'amqp' }))
  }

  /**
   * A handler threw: its event goes to the next retry step (or the archive),
   * sent from here, where the run is, with the error noted, and confirmed
   * before the run ends (as Ignore, so the worker acks the original). If it
   * cannot be sent, the run ends as Reject: the worker sends it itself from
   * the message's bytes, or, failing that, the broker dead-letters it to
   * `S:retry` (RabbitMQ) or it goes back to its queue.
   */
  private async handleFailure(ctx: TaskContext, error: unknown, maxRetries: number, countdown?: number): Promise<void> {
    const route = routeFailure(ctx.retries, maxRetries, this.settings, countdown)
    const note = failureNote(error)
    const event = ctx.name
    if (route.kind === 'drop') {
      console.error(
        `Task ${event}[${ctx.id}] dropped after ${ctx.retries} retries (the archive is off: AMQP_EVENTS_ARCHIVED_* are 0): ${note.error}`,
      )
      return
    }
    const now = new Date()
    const message = resendFromContext(ctx, {
      retries: route.retries,
      eta: route.kind === 'retry' ? new Date(now.getTime() + route.delaySeconds * 1000) : null,
      origin: ctx.hostname,
      failure: note,
      ...(route.kind === 'archive' ? { archived: { at: now, reason: `failed ${route.retries} times` } } : {}),
    })
    try {
      await sendFailure(await this.transport(), this.service, event, this.settings, route, message, now.getTime())
    } catch (sendError) {
      console.error(
        `Task ${event}[${ctx.id}] failed (${note.error}) and could not be sent to ${routeTarget(this.service, route)}: ${(sendError as Error).message}`,
      )
      throw new Reject(`could not send to ${routeTarget(this.service, route)}`)
    }
    if (route.kind === 'retry')
      console.warn(`Task ${event}[${ctx.id}] retry: Retry in ${route.delaySeconds}s (${routeTarget(this.service, route)}): ${note.error}`)
    else
      console.warn(`Task ${event}[${ctx.id}] archived to ${routeTarget(this.service, route)} after ${ctx.retries} retries: ${note.error}`)
  }
}

/**
 * Publishes one event as a Python service fires it (`send_task(E, args,
 * routing_key=E)` to the `events` exchange): a Celery task message named
 * as the event, confirmed by the broker before it resolves. Declares the
 * `events` exchange (topic) first, as the library's producer does.
 */
export async function fireEvent(
  transport: Transport,
  event: string,
  args: unknown[] = [],
  kwargs: Record<string, unknown> = {},
  options: { replyTo?: string; signals?: App['signals'] } = {},
): Promise<string> {
  checkEventName(event, 'fire')
  await declareTopology(transport, {
    exchanges: [{ name: EVENTS_EXCHANGE, type: 'topic', durable: true, autoDelete: false }],
    queues: [],
    bindings: [],
  })
  return sendTask(
    transport,
    event,
    {
      args,
      kwargs,
      exchange: EVENTS_EXCHANGE,
      routingKey: event,
      origin: clientOrigin(),
      ...(options.replyTo ? { replyTo: options.replyTo } : {}),
    },
    options.signals,
  )
}

/**
 * `createEventsApp('billing', { imports: [...] })`: the service name prefixes
 * every queue and exchange of the service (give each service its own, or two
 * services share one queue and each event reaches only one of them).
 */
export function createEventsApp(service: string, options: EventsAppOptions = {}): EventsApp {
  return new EventsApp(service, options)
}
