// A service's bus topology as data, exactly as celery-amqp-events declares it
// (amqp_events/celery.py: _generate_task_queues, _register_retry_queues,
// _register_archived_queue), so RabbitMQ sees the same flags and arguments
// from a tsq worker as from a Python one and never answers 406. Pure.
import type { ExchangeSpec, QueueArguments, QueueSpec } from '../transport/index.js'
import {
  archivedExchangeName,
  EVENTS_EXCHANGE,
  handlerQueueName,
  recoverExchangeName,
  retryExchangeName,
  stepDelaySeconds,
} from './names.js'
import { archiveEnabled, type BusSettings } from './settings.js'

export interface BindingSpec {
  queue: string
  exchange: string
  routingKey: string
}

export interface BusTopology {
  exchanges: ExchangeSpec[]
  queues: QueueSpec[]
  bindings: BindingSpec[]
}

/** kombu's Exchange() and Queue() defaults: durable, not auto-deleted. */
const exchange = (name: string, type: ExchangeSpec['type']): ExchangeSpec => ({ name, type, durable: true, autoDelete: false })
const queue = (name: string, args?: QueueArguments): QueueSpec => ({
  name,
  durable: true,
  exclusive: false,
  autoDelete: false,
  ...(args ? { arguments: args } : {}),
})

/** `S.E`'s arguments: x-dead-letter-exchange = the first retry step, when there are retries (else none at all). */
export function handlerQueueArguments(service: string, settings: BusSettings): QueueArguments | undefined {
  return settings.maxRetries > 0 ? { 'x-dead-letter-exchange': retryExchangeName(service) } : undefined
}

/** Retry step n's queue: x-message-ttl = 2ⁿ × 1000 ms, then dead-lettered to `S:recover`. */
export function retryQueueArguments(service: string, step: number): QueueArguments {
  return { 'x-message-ttl': stepDelaySeconds(step) * 1000, 'x-dead-letter-exchange': recoverExchangeName(service) }
}

export function archiveQueueArguments(settings: BusSettings): QueueArguments {
  return { 'x-message-ttl': settings.archiveTtlMs, 'x-max-length': settings.archiveMaxLength, 'x-queue-mode': 'lazy' }
}

/** The handler queue of one event, with its two bindings (the library's `_generate_task_queues`). */
export function handlerQueueTopology(service: string, event: string, settings: BusSettings): BusTopology {
  const name = handlerQueueName(service, event)
  const exchanges = [exchange(EVENTS_EXCHANGE, 'topic')]
  const bindings: BindingSpec[] = [{ queue: name, exchange: EVENTS_EXCHANGE, routingKey: event }]
  if (settings.maxRetries > 0) {
    exchanges.push(exchange(recoverExchangeName(service), 'topic'))
    bindings.push({ queue: name, exchange: recoverExchangeName(service), routingKey: event })
  }
  return { exchanges, queues: [queue(name, handlerQueueArguments(service, settings))], bindings }
}

/**
 * Everything a service declares on RabbitMQ: the events exchange, its handler
 * queues (bound to `events` and `S:recover` by the event's name), one fanout
 * exchange and TTL queue per retry step, and the archive. `steps` false leaves
 * out the retry steps and the archive, which Redis and the file broker keep
 * in parking lots instead of queues.
 */
export function busTopology(
  service: string,
  events: readonly string[],
  settings: BusSettings,
  options: { steps?: boolean } = {},
): BusTopology {
  const out: BusTopology = { exchanges: [exchange(EVENTS_EXCHANGE, 'topic')], queues: [], bindings: [] }
  if (options.steps !== false) {
    for (let step = 0; step < settings.maxRetries; step += 1) {
      const name = retryExchangeName(service, step)
      out.exchanges.push(exchange(name, 'fanout'))
      out.queues.push(queue(name, retryQueueArguments(service, step)))
      out.bindings.push({ queue: name, exchange: name, routingKey: '' })
    }
    if (archiveEnabled(settings)) {
      const name = archivedExchangeName(service)
      out.exchanges.push(exchange(name, 'fanout'))
      out.queues.push(queue(name, archiveQueueArguments(settings)))
      out.bindings.push({ queue: name, exchange: name, routingKey: '' })
    }
  }
  for (const event of events) {
    const part = handlerQueueTopology(service, event, settings)
    for (const e of part.exchanges) if (!out.exchanges.some((x) => x.name === e.name)) out.exchanges.push(e)
    out.queues.push(...part.queues)
    out.bindings.push(...part.bindings)
  }
  return out
}

/** How many queues the topology holds: N retry steps + M handler queues + 1 archive (the library's "N + M + 1"). */
export function queueCount(topology: BusTopology): number {
  return topology.queues.length
}
