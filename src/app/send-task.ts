import { hostname } from 'node:os'
import { encodeTaskV2With, type BodyEncoder, type TaskSendOptions } from '../protocol/index.js'
import type { Transport } from '../transport/index.js'
import type { AppSignals } from './app-signals.js'
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
}

/** `gen<pid>@<host>`: the origin Celery stamps on tasks sent from outside a worker. */
export function clientOrigin(): string {
  return `gen${process.pid}@${hostname()}`
}

/**
 * `app.send_task`: protocol v2 to the default exchange with the queue name as
 * routing key (spec §1.2 rule 2), after declaring the queue as Celery would.
 * `signals`: the sending app's, for before_task_publish (whose receivers may
 * change the headers that go out, as Celery's may) and after_task_publish.
 */
const JSON_BODY: BodyEncoder = { serializer: 'json' }

export async function sendTask(transport: Transport, name: string, options: SendTaskOptions = {}, signals?: AppSignals, encoder: BodyEncoder = JSON_BODY): Promise<string> {
  const queue = options.queue ?? DEFAULT_QUEUE
  const { resolveQueue, deliveryMode: defaultDeliveryMode, ...encodeOptions } = options
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
    await declareTaskQueue(transport, queue, definition)
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
  if (delayS >= 1) await transport.publishDelayed!(queue, outgoing, delayS)
  else await transport.publish(exchange, routingKey, outgoing)
  if (announce) signals.send('after_task_publish', { sender: name, body: body!, exchange, routingKey, headers: message.headers as Record<string, unknown> })
  return message.properties.correlationId
}

/** Seconds from now to an ISO ETA header; 0 when there is none or it has passed. */
function etaDelaySeconds(eta: unknown): number {
  if (typeof eta !== 'string') return 0
  const ms = Date.parse(eta) - Date.now()
  return Number.isFinite(ms) && ms > 0 ? ms / 1000 : 0
}
