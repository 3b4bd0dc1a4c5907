import { hostname } from 'node:os'
import {
  buildEvent,
  encodeEvent,
  encodeTaskV2With,
  orderEventFields,
  utcoffsetHours,
  type BodyEncoder,
  type SerializedTaskMessage,
  type TaskSendOptions,
} from '../protocol/index.js'
import type { Headers, LamportClock, OutgoingMessage, Transport } from '../transport/index.js'
import { declareEventExchange, EVENT_EXCHANGE } from './event-receiver.js'
import {
  retryFailedPublish,
  withPublishRetry,
  type PublishRetryPolicy,
  declareTaskQueue,
  isQuorumQueue,
  isTaskQueueDeclared,
  QueueSettingError,
  type QueueDefinition,
} from '../config/index.js'
import { startSendSpan, type SendSpan } from '../tracing/index.js'

export const DEFAULT_QUEUE = 'celery'

/**
 * Celery's before_task_publish and after_task_publish (a message is about to
 * be published, and was): `headers` may be changed and the message goes out
 * with the change, as Celery's headers dict does; `body` is [args, kwargs,
 * embed], for reading.
 */
export interface PublishSignalPayloads {
  before_task_publish: {
    sender: string
    body: unknown[]
    exchange: string
    routingKey: string
    headers: Record<string, unknown>
    properties: Record<string, unknown>
  }
  after_task_publish: { sender: string; body: unknown[]; exchange: string; routingKey: string; headers: Record<string, unknown> }
}

/** Where a send announces those two: the sending app's signals (the app's AppSignals, app/app-signals.ts). */
export interface PublishSignals {
  has(name: keyof PublishSignalPayloads): boolean
  send<K extends keyof PublishSignalPayloads>(name: K, payload: PublishSignalPayloads[K]): void
}

/**
 * How much earlier than its ETA a task sent through the broker's delayed
 * delivery comes back (worker/task-path/admission.ts's BROKER_QUEUE_HOLD_S must be
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
  /**
   * Seconds the broker has to confirm the publish (Celery's apply_async(timeout=),
   * task_publish_timeout); past it the send fails with PublishTimeoutError, which
   * says whether the message may still be delivered. Absent: it waits (a blocked broker).
   */
  timeout?: number | null
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

export function sendTask(
  transport: Transport,
  name: string,
  options: SendTaskOptions = {},
  signals?: PublishSignals,
  encoder: BodyEncoder = JSON_BODY,
): Promise<string> {
  return sendTaskAs(transport, name, options, signals, encoder, taskIdOf)
}

const taskIdOf = (id: string): string => id

/**
 * sendTask resolving with `resultOf(id)` (an app's AsyncResult), made when
 * the message is: one promise less per send than chaining a then.
 */
export function sendTaskAs<R>(...send: Parameters<typeof startSend<R>>): Promise<R> {
  try {
    return startSend(...send)
  } catch (error) {
    return Promise.reject(error)
  }
}

/**
 * Everything up to the publish runs in the caller's turn, with no await
 * unless the queue is not declared yet: concurrent sends then reach the
 * transport together and share its batched write.
 */
function startSend<R>(
  transport: Transport,
  name: string,
  options: SendTaskOptions,
  signals: PublishSignals | undefined,
  encoder: BodyEncoder,
  resultOf: (id: string) => R,
): Promise<R> {
  const queue = options.queue ?? DEFAULT_QUEUE
  const message = encodeTaskV2With(name, options, encoder, options.origin ?? clientOrigin())
  const retryPolicy = options.retryPolicy
  let exchange = ''
  let routingKey = queue
  let deliveryMode: 1 | 2 = options.deliveryMode ?? message.properties.deliveryMode
  let quorum = false
  let declared: Promise<void> | undefined
  // The declared queue's exchange type, for the trace (none for an exchange named by the sender: nothing declared).
  let exchangeType: string | undefined
  if (options.exchange) {
    exchange = options.exchange
    routingKey = options.routingKey ?? queue
  } else {
    const definition = options.resolveQueue?.(queue)
    exchangeType = definition?.exchange.type ?? 'direct'
    if (!isTaskQueueDeclared(transport, queue))
      declared = withPublishRetry(retryPolicy, () => declareTaskQueue(transport, queue, definition))
    quorum = isQuorumQueue(definition)
    if (quorum && options.priority) {
      const refusal = new QueueSettingError(
        `queue ${JSON.stringify(queue)} is a quorum queue, whose messages have no priority (priority=${options.priority}); send without one or route to a classic queue`,
      )
      return declared ? declared.then(() => Promise.reject(refusal)) : Promise.reject(refusal)
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
  // apply_async/<task> around the publish, its context in the headers (docs/tracing.md); undefined when not tracing.
  const span = startSendSpan({
    taskId: message.properties.correlationId,
    taskName: name,
    exchange,
    routingKey,
    exchangeType,
    headers: message.headers as Record<string, unknown>,
  })
  const announce = signals !== undefined && (signals.has('before_task_publish') || signals.has('after_task_publish'))
  if (announce || options.sentEvent) {
    const target = { queue, exchange, routingKey, quorum, deliveryMode }
    const announced = declared
      ? declared.then(() => publishAnnounced(transport, name, options, signals, message, target))
      : publishAnnounced(transport, name, options, signals, message, target)
    return spanned(span, announced).then(resultOf)
  }
  const outgoing = outgoingOf(message, deliveryMode)
  // Celery 5.5's send_task: an ETA bound for a quorum queue waits in the
  // broker's native delayed delivery, not in a worker whose prefetch is
  // static there. It is sent BROKER_DELAY_LEAD_S early (and the ladder counts
  // whole seconds): each hop of the ladder is a replicated dead-lettering,
  // seconds in all on a loaded cluster, and the worker holds the rest.
  const delayS = quorum && transport.publishDelayed ? etaDelaySeconds(message.headers.eta) - BROKER_DELAY_LEAD_S : 0
  const timed = publishTimeout(options)
  const publish =
    delayS >= 1 ? () => transport.publishDelayed!(queue, outgoing, delayS) : () => transport.publish(exchange, routingKey, outgoing, timed)
  const result = resultOf(message.properties.correlationId)
  if (declared)
    return spanned(
      span,
      declared.then(() => withPublishRetry(retryPolicy, publish)),
    ).then(() => result)
  let first: Promise<void>
  try {
    first = publish()
  } catch (error) {
    first = Promise.reject(error)
  }
  // withPublishRetry, written out: one promise for the send, not three.
  if (span)
    return spanned(
      span,
      first.catch((error: unknown) => retryFailedPublish(error, retryPolicy, publish)),
    ).then(() => result)
  return first.then(
    () => result,
    (error: unknown) => retryFailedPublish(error, retryPolicy, publish).then(() => result),
  )
}

/** `published`, ending the send's span when it settles. */
function spanned<T>(span: SendSpan | undefined, published: Promise<T>): Promise<T> {
  if (!span) return published
  return published.then(
    (value) => {
      span.end()
      return value
    },
    (error: unknown) => {
      span.end(error)
      throw error
    },
  )
}

/** The publish options of a send with a timeout; undefined (the common case) without one. */
function publishTimeout(options: SendTaskOptions): { timeoutMs: number } | undefined {
  const t = options.timeout
  return typeof t === 'number' && t > 0 ? { timeoutMs: t * 1000 } : undefined
}

function outgoingOf(message: SerializedTaskMessage, deliveryMode: 1 | 2): OutgoingMessage {
  const p = message.properties
  const outgoing: OutgoingMessage = {
    body: message.body,
    properties: {
      contentType: message.contentType,
      contentEncoding: message.contentEncoding,
      headers: message.headers as Headers,
      deliveryMode,
      priority: p.priority,
      correlationId: p.correlationId,
      replyTo: p.replyTo,
    },
  }
  if (p.expiration !== undefined) outgoing.properties.expiration = p.expiration
  return outgoing
}

/** The send with before/after_task_publish receivers or a task-sent event: the message as the receivers leave it. */
async function publishAnnounced(
  transport: Transport,
  name: string,
  options: SendTaskOptions,
  signals: PublishSignals | undefined,
  message: SerializedTaskMessage,
  target: { queue: string; exchange: string; routingKey: string; quorum: boolean; deliveryMode: 1 | 2 },
): Promise<string> {
  const { queue, exchange, routingKey, quorum } = target
  const retryPolicy = options.retryPolicy
  const sentEvent = options.sentEvent
  const announce = signals !== undefined && (signals.has('before_task_publish') || signals.has('after_task_publish'))
  const body = announce ? message.value : undefined
  if (announce)
    signals.send('before_task_publish', {
      sender: name,
      body: body!,
      exchange,
      routingKey,
      headers: message.headers as Record<string, unknown>,
      properties: message.properties as unknown as Record<string, unknown>,
    })
  const outgoing = outgoingOf(message, target.deliveryMode)
  const delayS = quorum && transport.publishDelayed ? etaDelaySeconds(message.headers.eta) - BROKER_DELAY_LEAD_S : 0
  if (delayS >= 1) await withPublishRetry(retryPolicy, () => transport.publishDelayed!(queue, outgoing, delayS))
  else await withPublishRetry(retryPolicy, () => transport.publish(exchange, routingKey, outgoing, publishTimeout(options)))
  if (sentEvent) {
    const h = message.headers as unknown as Record<string, unknown>
    // Celery's as_task_v2 sent_event, then send_task_message's queue, exchange and routing key.
    const fields = {
      uuid: h.id,
      root_id: h.root_id,
      parent_id: h.parent_id,
      name: h.task,
      args: h.argsrepr,
      kwargs: h.kwargsrepr,
      retries: h.retries,
      eta: h.eta,
      expires: h.expires,
      queue: options.exchange ? (options.queue ?? null) : queue,
      exchange,
      routing_key: routingKey,
    }
    const event = buildEvent('task-sent', orderEventFields('task-sent', fields), {
      hostname: sentEvent.hostname,
      utcoffset: utcoffsetHours(),
      pid: process.pid,
      clock: sentEvent.clock.forward(),
      timestamp: Date.now() / 1000,
    })
    await withPublishRetry(retryPolicy, async () => {
      await declareEventExchange(transport)
      await transport.publish(EVENT_EXCHANGE, 'task.sent', {
        body: Buffer.from(encodeEvent(event), 'utf8'),
        properties: {
          contentType: 'application/json',
          contentEncoding: 'utf-8',
          headers: { hostname: sentEvent.hostname },
          deliveryMode: 1,
          priority: 0,
        },
      })
    })
  }
  if (announce)
    signals.send('after_task_publish', {
      sender: name,
      body: body!,
      exchange,
      routingKey,
      headers: message.headers as Record<string, unknown>,
    })
  return message.properties.correlationId
}

/** Seconds from now to an ISO ETA header; 0 when there is none or it has passed. */
function etaDelaySeconds(eta: unknown): number {
  if (typeof eta !== 'string') return 0
  const ms = Date.parse(eta) - Date.now()
  return Number.isFinite(ms) && ms > 0 ? ms / 1000 : 0
}
