import { hostname } from 'node:os'
import { encodeTaskV2With, type BodyEncoder, type TaskSendOptions } from '../protocol/index.js'
import type { Transport } from '../transport/index.js'
import type { AppSignals } from './app-signals.js'
import { declareTaskQueue, type QueueDefinition } from './queues.js'

export const DEFAULT_QUEUE = 'celery'

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
  const { resolveQueue, deliveryMode: defaultDeliveryMode, ...encodeOptions } = options
  const message = encodeTaskV2With(name, { ...encodeOptions, origin: options.origin ?? clientOrigin() }, encoder)
  let exchange = ''
  let routingKey = queue
  let deliveryMode: 1 | 2 = defaultDeliveryMode ?? message.properties.deliveryMode
  if (options.exchange) {
    exchange = options.exchange
    routingKey = options.routingKey ?? queue
  } else {
    const definition = resolveQueue?.(queue)
    await declareTaskQueue(transport, queue, definition)
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
  await transport.publish(exchange, routingKey, {
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
  })
  if (announce) signals.send('after_task_publish', { sender: name, body: body!, exchange, routingKey, headers: message.headers as Record<string, unknown> })
  return message.properties.correlationId
}
