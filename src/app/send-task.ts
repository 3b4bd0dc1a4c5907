import { hostname } from 'node:os'
import { buildEvent, encodeEvent, encodeTaskV2With, orderEventFields, utcoffsetHours, type BodyEncoder, type TaskSendOptions } from '../protocol/index.js'
import type { LamportClock, Transport } from '../transport/index.js'
import type { AppSignals } from './app-signals.js'
import { declareEventExchange, EVENT_EXCHANGE } from './event-receiver.js'
import { withPublishRetry, type PublishRetryPolicy } from './publish-retry.js'
import { declareTaskQueue, isQuorumQueue, QueueSettingError, type QueueDefinition } from './queues.js'

export const DEFAULT_QUEUE = 'celery'

/**
 * How much earlier than its ETA a task sent through the broker's delayed
 * delivery comes back (worker/task-runner.ts's BROKER_QUEUE_HOLD_S must be
 * larger, or the worker would send it round again).
 */
export const BROKER_DELAY_LEAD_S = 2

export interface SendTaskOptions extends Omit<TaskSendOptions, 'origin'> {
  queue?: string
  /** Publish to this exchange with routingKey instead of the default exchange. */
  exchange?: string
  routingKey?: string
  origin?: string
  /** The app's definition of a queue (task_queues, task_create_missing_queues); without it, Celery's automatic queue. */
  resolveQueue?: (name: string) => QueueDefinition
  /** task_default_delivery_mode, when the queue's exchange names none: 1 transient, 2 persistent. */
  deliveryMode?: 1 | 2
  /** task_publish_retry_policy (null: task_publish_retry off): a publish cut by a lost connection is tried again. */
  retryPolicy?: PublishRetryPolicy | null
  /** task_send_sent_event: after the publish, a task-sent event from this node name, on this clock. */
  sentEvent?: { hostname: string; clock: LamportClock }
}

/** `gen<pid>@<host>`: the origin Celery stamps on tasks sent from outside a worker. */
export function clientOrigin(): string {
  // os.hostname() is a system call; a send path calling it per message showed in profiles.
  origin ??= `gen${process.pid}@${hostname()}`
  return origin
}
let origin: string | undefined

/**
 * `app.send_task`: protocol v2 to the default exchange with the queue name as
 * routing key (spec §1.2 rule 2), after declaring the queue as Celery would.
 * `signals`: the sending app's, for before_task_publish (whose receivers may
 * change the headers that go out, as Celery's may) and after_task_publish.
 */
const JSON_BODY: BodyEncoder = { serializer: 'json' }

export async function sendTask(transport: Transport, name: string, options: SendTaskOptions = {}, signals?: AppSignals, encoder: BodyEncoder = JSON_BODY): Promise<string> {
  const queue = options.queue ?? DEFAULT_QUEUE
  const { resolveQueue, deliveryMode: defaultDeliveryMode, retryPolicy, sentEvent, ...encodeOptions } = options
  const message = encodeTaskV2With(name, { ...encodeOptions, origin: options.origin ?? clientOrigin() }, encoder)
  let exchange = ''
  let routingKey = queue
  let deliveryMode: 1 | 2 = defaultDeliveryMode ?? message.properties.deliveryMode
  let quorum = false
  if (options.exchange) {
    exchange = options.exchange
    routingKey = options.routingKey ?? queue
  } else {
    const definition = resolveQueue?.(queue)
    await withPublishRetry(retryPolicy, () => declareTaskQueue(transport, queue, definition))
    quorum = isQuorumQueue(definition)
    if (quorum && options.priority) {
      throw new QueueSettingError(`queue ${JSON.stringify(queue)} is a quorum queue, whose messages have no priority (priority=${options.priority}); send without one or route to a classic queue`)
    }
    if (definition) {
      deliveryMode = definition.deliveryMode ?? deliveryMode
      // Celery's send_task_message: a direct exchange becomes the default
      // exchange with the queue's name as key; any other goes to the queue's
      // exchange with its routing key.
      if (definition.exchange.type !== 'direct') {
        exchange = definition.exchange.name
        routingKey = options.routingKey ?? definition.routingKey
      }
    }
  }
  const announce = signals && (signals.has('before_task_publish') || signals.has('after_task_publish'))
  const body = announce ? message.value : undefined
  if (announce) signals.send('before_task_publish', { sender: name, body: body!, exchange, routingKey, headers: message.headers as Record<string, unknown>, properties: message.properties as unknown as Record<string, unknown> })
  const outgoing = {
    body: message.body,
    properties: {
      contentType: message.contentType,
      contentEncoding: message.contentEncoding,
      headers: message.headers as Record<string, never>,
      deliveryMode,
      priority: message.properties.priority,
      correlationId: message.properties.correlationId,
      replyTo: message.properties.replyTo,
      ...(message.properties.expiration !== undefined ? { expiration: message.properties.expiration } : {}),
    },
  }
  // Celery 5.5's send_task: an ETA bound for a quorum queue waits in the
  // broker's native delayed delivery, not in a worker whose prefetch is
  // static there. It is sent BROKER_DELAY_LEAD_S early (and the ladder counts
  // whole seconds): each hop of the ladder is a replicated dead-lettering,
  // seconds in all on a loaded cluster, and the worker holds the rest.
  const delayS = quorum && transport.publishDelayed ? etaDelaySeconds(message.headers.eta) - BROKER_DELAY_LEAD_S : 0
  if (delayS >= 1) await withPublishRetry(retryPolicy, () => transport.publishDelayed!(queue, outgoing, delayS))
  else await withPublishRetry(retryPolicy, () => transport.publish(exchange, routingKey, outgoing))
  if (sentEvent) {
    const h = message.headers as unknown as Record<string, unknown>
    // Celery's as_task_v2 sent_event, then send_task_message's queue, exchange and routing key.
    const fields = { uuid: h.id, root_id: h.root_id, parent_id: h.parent_id, name: h.task, args: h.argsrepr, kwargs: h.kwargsrepr, retries: h.retries, eta: h.eta, expires: h.expires, queue: options.exchange ? (options.queue ?? null) : queue, exchange, routing_key: routingKey }
    const event = buildEvent('task-sent', orderEventFields('task-sent', fields), { hostname: sentEvent.hostname, utcoffset: utcoffsetHours(), pid: process.pid, clock: sentEvent.clock.forward(), timestamp: Date.now() / 1000 })
    await withPublishRetry(retryPolicy, async () => {
      await declareEventExchange(transport)
      await transport.publish(EVENT_EXCHANGE, 'task.sent', {
        body: Buffer.from(encodeEvent(event), 'utf8'),
        properties: { contentType: 'application/json', contentEncoding: 'utf-8', headers: { hostname: sentEvent.hostname }, deliveryMode: 1, priority: 0 },
      })
    })
  }
  if (announce) signals.send('after_task_publish', { sender: name, body: body!, exchange, routingKey, headers: message.headers as Record<string, unknown> })
  return message.properties.correlationId
}

/** Seconds from now to an ISO ETA header; 0 when there is none or it has passed. */
function etaDelaySeconds(eta: unknown): number {
  if (typeof eta !== 'string') return 0
  const ms = Date.parse(eta) - Date.now()
  return Number.isFinite(ms) && ms > 0 ? ms / 1000 : 0
}
