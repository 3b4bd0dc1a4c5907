import { hostname } from 'node:os'
import { encodeTaskV2, type TaskSendOptions } from '../protocol/index.js'
import type { Transport } from '../transport/index.js'
import { declareTaskQueue } from './queues.js'

export const DEFAULT_QUEUE = 'celery'

export interface SendTaskOptions extends Omit<TaskSendOptions, 'origin'> {
  queue?: string
  /** Publish to this exchange with routingKey instead of the default exchange. */
  exchange?: string
  routingKey?: string
  origin?: string
}

/** `gen<pid>@<host>`: the origin Celery stamps on tasks sent from outside a worker. */
export function clientOrigin(): string {
  return `gen${process.pid}@${hostname()}`
}

/**
 * `app.send_task`: protocol v2 to the default exchange with the queue name as
 * routing key (spec §1.2 rule 2), after declaring the queue as Celery would.
 */
export async function sendTask(transport: Transport, name: string, options: SendTaskOptions = {}): Promise<string> {
  const queue = options.queue ?? DEFAULT_QUEUE
  const message = encodeTaskV2(name, { ...options, origin: options.origin ?? clientOrigin() })
  let exchange = ''
  let routingKey = queue
  if (options.exchange) {
    exchange = options.exchange
    routingKey = options.routingKey ?? queue
  } else {
    await declareTaskQueue(transport, queue)
  }
  await transport.publish(exchange, routingKey, {
    body: Buffer.from(message.body, 'utf8'),
    properties: {
      contentType: message.contentType,
      contentEncoding: message.contentEncoding,
      headers: message.headers as Record<string, never>,
      deliveryMode: message.properties.deliveryMode,
      priority: message.properties.priority,
      correlationId: message.properties.correlationId,
      replyTo: message.properties.replyTo,
      ...(message.properties.expiration !== undefined ? { expiration: message.properties.expiration } : {}),
    },
  })
  return message.properties.correlationId
}
