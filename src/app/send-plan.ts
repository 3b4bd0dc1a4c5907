// What every send of an app derives from its options and conf, for one
// version of them (conf-watch.ts): its encoder, queues, routes and how it
// publishes.
import type { BodyEncoder } from '../protocol/index.js'
import type { LamportClock } from '../transport/index.js'
import {
  publishRetryPolicy,
  queueDefinition,
  queueSettings,
  routedSend,
  routeTask,
  type PublishRetryPolicy,
  type QueueDefinition,
  type QueueSettings,
  type Route,
  type SendDestination,
} from '../config/index.js'
import { clientOrigin, type SendTaskOptions } from '../client/index.js'
import type { App } from './app.js'

/**
 * What every send of an app derives from its options and conf, kept for one
 * version of them (conf-watch.ts): before, each send resolved the broker
 * config, rebuilt task_queues' definitions and read the routes again. Each
 * part is made on first use, so a part that refuses the conf (task_queues,
 * task_serializer) fails only the callers that need it, as before.
 */
export class SendPlan {
  private rpcBackend: boolean | undefined
  private bodyEncoder: BodyEncoder | undefined
  private queues: QueueSettings | undefined
  private policy: PublishRetryPolicy | null | undefined
  private readonly definitions = new Map<string, QueueDefinition>()
  /** routeFor's answers, by task name. */
  readonly routes = new Map<string, Route>()
  /** task_send_sent_event: the hostname and clock of task-sent events, or undefined. */
  readonly sentEvent: SendTaskOptions['sentEvent']
  readonly resolveQueue = (name: string): QueueDefinition => {
    let definition = this.definitions.get(name)
    if (!definition) this.definitions.set(name, (definition = queueDefinition(this.settings, name)))
    return definition
  }

  constructor(
    readonly version: number,
    private readonly app: App,
    private readonly conf: Record<string, unknown>,
    clock: LamportClock,
  ) {
    this.sentEvent = conf.task_send_sent_event === true ? { hostname: clientOrigin(), clock } : undefined
  }

  /** The result backend is rpc://: its reply queue must be up before a send. */
  get rpc(): boolean {
    return (this.rpcBackend ??= this.app.config.resultBackend?.startsWith('rpc://') === true)
  }

  get encoder(): BodyEncoder {
    return (this.bodyEncoder ??= this.app.taskEncoder())
  }

  get settings(): QueueSettings {
    return (this.queues ??= queueSettings(this.conf, this.app.defaultQueue))
  }

  /** task_publish_timeout: seconds a client's send waits for the broker's confirm; null: no limit. */
  get publishTimeout(): number | null {
    const t = this.conf.task_publish_timeout
    return typeof t === 'number' && Number.isFinite(t) && t > 0 ? t : null
  }

  get retryPolicy(): PublishRetryPolicy | null {
    if (this.policy === undefined) this.policy = publishRetryPolicy(this.conf)
    return this.policy
  }

  /** The app's task_routes for `taskName`, else the default queue (App.routeFor). */
  routeFor(taskName: string): Route {
    let route = this.routes.get(taskName)
    if (!route) this.routes.set(taskName, (route = routeTask(taskName, this.conf.task_routes) ?? { queue: this.app.defaultQueue }))
    return route
  }

  /** How every send of the app publishes, the worker's follow-ups too: task_publish_retry_policy and task_send_sent_event. */
  publishing(): Pick<SendTaskOptions, 'retryPolicy' | 'sentEvent'> {
    return this.sentEvent ? { retryPolicy: this.retryPolicy, sentEvent: this.sentEvent } : { retryPolicy: this.retryPolicy }
  }

  /**
   * A send's queue, exchange and routing key: the ones given, else the task's
   * route; with the app's queue definitions, so the queue is declared as
   * task_queues says; and how every send of this app publishes.
   */
  routed(
    taskName: string,
    queue: unknown,
    given: { exchange?: string; routingKey?: string } = {},
  ): SendDestination & Pick<SendTaskOptions, 'resolveQueue' | 'deliveryMode' | 'retryPolicy' | 'sentEvent' | 'timeout'> {
    return {
      ...routedSend({ queue: typeof queue === 'string' ? queue : undefined, exchange: given.exchange, routingKey: given.routingKey }, () =>
        this.routeFor(taskName),
      ),
      resolveQueue: this.resolveQueue,
      deliveryMode: this.settings.defaultDeliveryMode,
      ...this.publishing(),
      ...(this.publishTimeout !== null ? { timeout: this.publishTimeout } : {}),
    }
  }

  /**
   * routed() written into a send's own options object, which the caller owns:
   * the same keys with the same values, without the objects in between.
   */
  routeInto(o: SendTaskOptions, taskName: string): void {
    if (typeof o.queue !== 'string') {
      const route = this.routeFor(taskName)
      o.queue = route.queue
      o.exchange = o.exchange ?? route.exchange
      o.routingKey = o.routingKey ?? route.routingKey
    }
    o.resolveQueue = this.resolveQueue
    o.deliveryMode = this.settings.defaultDeliveryMode
    o.retryPolicy = this.retryPolicy
    if (this.sentEvent) o.sentEvent = this.sentEvent
    if (o.timeout === undefined && this.publishTimeout !== null) o.timeout = this.publishTimeout
  }
}
