// kombu 5.5's "native delayed delivery" for RabbitMQ, declared exactly as kombu
// declares it, so that tsq and Celery 5.5 workers share one ladder on a broker.
//
// Why: a worker that takes an ETA/countdown message and holds it unacked until
// the ETA trips RabbitMQ's consumer_timeout (30 min by default), which closes
// the channel and redelivers everything it held. With this layout the broker
// holds the delay instead: the message waits in TTL queues, not in a consumer.
//
// Source of truth (read, not remembered):
//   celery/kombu v5.5.4 (67588f8aa7cc6d561f786440485885de5d0753d3)
//     kombu/transport/native_delayed_delivery.py
//   celery/celery v5.5.3 (088c39c0f78b23a9cdf8d1c9e265ea64d02cfd86)
//     celery/worker/consumer/delayed_delivery.py (DelayedDelivery bootstep)
//     celery/app/base.py, Celery.send_task (where a countdown is published)
// test/fixtures/wire/native-delayed-delivery.json is what kombu 5.5's own code
// asks of a channel; the unit test holds this module to it.
//
// How the ladder works: a delay of N seconds is written as its 28 bits, most
// significant first, one topic word per bit, before the real routing key
// ("0.….1.1.celery" is 3 s). It enters at celery_delayed_27. At level L, a set
// bit routes the message into queue celery_delayed_L, whose TTL is 2**L s and
// whose dead-letter exchange is the next level down; a clear bit routes it
// straight on to the next level's exchange. Dead-lettering keeps the routing
// key, so the next level reads the next bit. Below level 0 is the topic
// exchange celery_delayed_delivery, to which each consumed queue's own
// exchange is bound with "#.<its routing key>", so the message lands where it
// would have gone without a delay.
//
// What the broker changes on the way (RabbitMQ's dead-lettering, not kombu):
// headers gain x-death and x-first-death-{exchange,queue,reason} (and
// x-last-death-* on 3.13+), the `expiration` property is dropped (kept as
// x-death's original-expiration), and the delivery names the dead-letter
// exchange of the last delay queue it sat in (celery_delayed_delivery when
// bit 0 is set, celery_delayed_<n> otherwise, celery_delayed_27 for a 0 s
// delay), with the bit-prefixed routing key. Body, other properties and the
// publisher's headers are untouched. A message whose `expiration` is shorter
// than the queue TTL it meets is dead-lettered early and so arrives early
// (6 s with expiration 500 ms came back after 2.5 s on RabbitMQ 3.10); Celery
// 5.5 behaves the same, and the worker's ETA check is what still holds it.
import type { Channel } from 'amqplib'
import { BrokerRequestError } from '../errors.js'
import type { OutgoingMessage } from '../transport.js'
import type { DelayedQueueType } from './delayed-queue-type.js'
import { DELAYED_DELIVERY_LEVELS, levelName } from './delayed-levels.js'

export { DELAYED_DELIVERY_LEVELS, levelName }

/** kombu's MAX_LEVEL. */
export const DELAYED_DELIVERY_MAX_LEVEL = DELAYED_DELIVERY_LEVELS - 1
/** kombu's CELERY_DELAYED_DELIVERY_EXCHANGE: where a message leaves the ladder. */
export const DELAYED_DELIVERY_EXCHANGE = 'celery_delayed_delivery'
/** Where Celery 5.5's send_task publishes a delayed message: the top level's exchange. */
export const DELAYED_ENTRY_EXCHANGE = 'celery_delayed_27'
/** 2**28 - 1 s (about 8.5 years); a 29th bit would shift every bit one level and misroute. */
export const MAX_DELAY_SECONDS = 2 ** DELAYED_DELIVERY_LEVELS - 1

/**
 * Celery 5.5's default for broker_native_delayed_delivery_queue_type. Whoever
 * declares the ladder first fixes its x-queue-type; a later declaration with
 * the other type gets 406 PRECONDITION_FAILED, so a tsq worker sharing a
 * broker with Celery 5.5 workers should declare what they declare.
 */
export const CELERY_DEFAULT_DELAYED_QUEUE_TYPE: DelayedQueueType = 'quorum'

export type { DelayedQueueType }

/** amqplib's typed-value form, the way this codebase writes AMQP table integers (as py-amqp tags them). */
export interface TypedInteger {
  '!': 'int' | 'long'
  value: number
}

export type DelayedQueueArguments = Record<string, string | TypedInteger>

export type DelayedDeliveryOp =
  | { method: 'exchange_declare'; exchange: string; type: 'topic'; durable: true; autoDelete: false }
  | {
      method: 'queue_declare'
      queue: string
      durable: true
      exclusive: false
      autoDelete: false
      arguments: DelayedQueueArguments
    }
  | { method: 'queue_bind'; queue: string; exchange: string; routingKey: string }
  | { method: 'exchange_bind'; destination: string; source: string; routingKey: string }

const INT32_MAX = 2_147_483_647

/** py-amqp writes an int past ±(2**31 - 1) as a 64-bit `L`; anything smaller as `I`. */
function tableInteger(value: number): TypedInteger {
  return { '!': Math.abs(value) <= INT32_MAX ? 'int' : 'long', value }
}

/**
 * kombu's calculate_routing_key: the delay's 28 bits, one word each, then the
 * routing key. Same output as kombu for every delay kombu accepts (1..2**28-1).
 * A fraction is truncated, as Celery's `int(countdown)` does, so the message
 * may come back up to a second early and the worker's ETA check holds the rest.
 * Unlike kombu, 0 (and so any delay under a second) is accepted: its all-zero
 * key walks the exchange chain without touching a queue, i.e. is delivered at
 * once, where kombu raises and Celery 5.5's send_task fails on 0 < countdown < 1.
 */
export function delayRoutingKey(delaySeconds: number, routingKey: string): string {
  if (!Number.isFinite(delaySeconds) || delaySeconds < 0) {
    throw new RangeError(`delay must be a non-negative number of seconds, got ${delaySeconds}`)
  }
  const seconds = Math.trunc(delaySeconds)
  if (seconds > MAX_DELAY_SECONDS) {
    throw new RangeError(`delay of ${seconds} s exceeds native delayed delivery's maximum of ${MAX_DELAY_SECONDS} s`)
  }
  if (!routingKey) throw new RangeError('routing key must be non-empty')
  return `${seconds.toString(2).padStart(DELAYED_DELIVERY_LEVELS, '0').split('').join('.')}.${routingKey}`
}

/**
 * Where to publish a message that must reach, after delaySeconds, the queue
 * bound with routingKey (Celery 5.5's send_task: exchange celery_delayed_27,
 * routing key from calculate_routing_key). A negative delay (an ETA already
 * past) is sent through the ladder's no-wait path rather than refused.
 */
export function delayedPublishTarget(delaySeconds: number, routingKey: string): { exchange: string; routingKey: string } {
  const delay = delaySeconds < 0 ? 0 : delaySeconds
  return { exchange: DELAYED_ENTRY_EXCHANGE, routingKey: delayRoutingKey(delay, routingKey) }
}

/** The arguments kombu gives queue celery_delayed_<level>; RabbitMQ compares them on every redeclare. */
export function delayedQueueArguments(level: number, queueType: DelayedQueueType): DelayedQueueArguments {
  const args: DelayedQueueArguments = {
    'x-queue-type': queueType,
    // Quorum dead-lettering at-least-once requires reject-publish; kombu sets it for both types.
    'x-overflow': 'reject-publish',
    'x-message-ttl': tableInteger(2 ** level * 1000),
    'x-dead-letter-exchange': level > 0 ? levelName(level - 1) : DELAYED_DELIVERY_EXCHANGE,
  }
  // Without it a quorum queue drops a message if the broker fails mid dead-letter.
  if (queueType === 'quorum') args['x-dead-letter-strategy'] = 'at-least-once'
  return args
}

/**
 * Every AMQP method kombu 5.5's declare_native_delayed_delivery_exchanges_and_queues
 * issues, in its order. Kept as data so the test can compare it with kombu's.
 */
export function delayedDeliveryLayout(queueType: DelayedQueueType = 'classic'): DelayedDeliveryOp[] {
  if (queueType !== 'classic' && queueType !== 'quorum') {
    throw new RangeError(`queue type must be classic or quorum, got ${String(queueType)}`)
  }
  const ops: DelayedDeliveryOp[] = []
  // Level L's queue takes the message when bit L (word 27 - L) is set.
  let routingKey = '1.#'
  for (let level = DELAYED_DELIVERY_MAX_LEVEL; level >= 0; level--) {
    const name = levelName(level)
    ops.push({ method: 'exchange_declare', exchange: name, type: 'topic', durable: true, autoDelete: false })
    ops.push({
      method: 'queue_declare',
      queue: name,
      durable: true,
      exclusive: false,
      autoDelete: false,
      arguments: delayedQueueArguments(level, queueType),
    })
    ops.push({ method: 'queue_bind', queue: name, exchange: name, routingKey })
    routingKey = `*.${routingKey}`
  }
  // A clear bit skips the level: its exchange forwards to the next one down.
  routingKey = '0.#'
  for (let level = DELAYED_DELIVERY_MAX_LEVEL; level > 0; level--) {
    ops.push({ method: 'exchange_bind', destination: levelName(level - 1), source: levelName(level), routingKey })
    routingKey = `*.${routingKey}`
  }
  // Bit 0 clear (or level 0's queue dead-lettering, via its DLX) leaves the ladder.
  ops.push({ method: 'exchange_declare', exchange: DELAYED_DELIVERY_EXCHANGE, type: 'topic', durable: true, autoDelete: false })
  ops.push({ method: 'exchange_bind', destination: DELAYED_DELIVERY_EXCHANGE, source: levelName(0), routingKey })
  return ops
}

/**
 * Declares the whole ladder as kombu 5.5 does (Celery 5.5's DelayedDelivery
 * bootstep, at worker start). Idempotent, and accepted by RabbitMQ alongside
 * kombu's own declaration of the same queue type. Sequential on purpose: a
 * failure names the first method the broker refused, and the channel is
 * closed by it anyway.
 */
export async function declareDelayedDelivery(channel: Channel, queueType: DelayedQueueType = 'classic'): Promise<void> {
  for (const op of delayedDeliveryLayout(queueType)) {
    switch (op.method) {
      case 'exchange_declare':
        await channel.assertExchange(op.exchange, op.type, { durable: op.durable, autoDelete: op.autoDelete })
        break
      case 'queue_declare':
        await channel.assertQueue(op.queue, {
          durable: op.durable,
          exclusive: op.exclusive,
          autoDelete: op.autoDelete,
          arguments: op.arguments,
        })
        break
      case 'queue_bind':
        await channel.bindQueue(op.queue, op.exchange, op.routingKey)
        break
      case 'exchange_bind':
        await channel.bindExchange(op.destination, op.source, op.routingKey)
        break
    }
  }
}

/** The key kombu binds with: "#.<key>", unless the key already starts with "#". */
export function delayedDeliveryBindingKey(routingKey: string): string {
  return routingKey.startsWith('#') ? routingKey : `#.${routingKey}`
}

/**
 * What Celery 5.5's DelayedDelivery bootstep does for each consumed queue
 * (kombu's bind_queue_to_native_delayed_delivery_exchange), for one of the
 * queue's bindings: bind its exchange to celery_delayed_delivery, and the queue
 * to its exchange, both with "#.<routing key>" — the bit words are still on the
 * key, and "#" eats them (and matches nothing extra for an undelayed message).
 *
 * Returns false, binding nothing, for a direct exchange: "#.key" means nothing
 * to one, so kombu skips it with a warning and Celery publishes such a
 * message undelayed, for the worker to hold. Also false for the default
 * exchange (""), which RabbitMQ refuses to bind.
 */
export async function bindForDelayedDelivery(
  channel: Channel,
  exchange: string,
  routingKey: string,
  queue: string,
  exchangeType: string,
): Promise<boolean> {
  if (exchangeType === 'direct' || exchange === '') return false
  const key = delayedDeliveryBindingKey(routingKey)
  await channel.bindExchange(exchange, DELAYED_DELIVERY_EXCHANGE, key)
  await channel.bindQueue(queue, exchange, key)
  return true
}

// ---- one transport's use of the ladder: declared once, each queue bound to
// its exit once, a delayed message published into it.

export interface DelayedPublishHost {
  /** broker_native_delayed_delivery_queue_type, when the app says it (else classic, then quorum). */
  readonly queueType: DelayedQueueType | undefined
  declareLadder(type: DelayedQueueType): Promise<void>
  bindQueue(queue: string, exchange: string, routingKey: string): Promise<void>
  publish(exchange: string, routingKey: string, message: OutgoingMessage): Promise<void>
}

export class DelayedPublisher {
  /** The ladder, declared on the first delayed publish. */
  private ladder: Promise<void> | null = null
  /** Queues bound to the ladder's exit, so a delayed message comes back to them. */
  private readonly bound = new Map<string, Promise<void>>()

  constructor(private readonly host: DelayedPublishHost) {}

  /**
   * The ladder of TTL queues holds the message for `delaySeconds`, then its
   * exit exchange routes it back by `#.<queue>`, which binds `queue` itself:
   * Celery binds the queue's exchange instead, which cannot work for the
   * direct exchanges Celery's own queues use.
   */
  async publish(queue: string, message: OutgoingMessage, delaySeconds: number): Promise<void> {
    // Declaring the ladder the first time takes seconds on a cluster (28
    // quorum queues); that time comes off the delay, so the message is not late.
    const asked = Date.now()
    await this.prepare()
    let bound = this.bound.get(queue)
    if (!bound) {
      bound = this.host.bindQueue(queue, DELAYED_DELIVERY_EXCHANGE, delayedDeliveryBindingKey(queue)).catch((err: unknown) => {
        this.bound.delete(queue)
        throw err
      })
      this.bound.set(queue, bound)
    }
    await bound
    // Whole seconds of it: the ladder counts whole seconds, and taking the
    // binding's few ms off a whole-second delay before flooring made a queue's
    // first delayed message a second early.
    const remaining = Math.floor(delaySeconds) - Math.round((Date.now() - asked) / 1000)
    const target = delayedPublishTarget(Math.min(Math.max(0, remaining), MAX_DELAY_SECONDS), queue)
    // Without the expiration property: RabbitMQ drops it on dead-lettering anyway,
    // and a shorter one would let the message out of the ladder early.
    const { expiration: _expiration, ...properties } = message.properties
    await this.host.publish(target.exchange, target.routingKey, { body: message.body, properties })
  }

  /** Declares the ladder once (a worker at start-up, as Celery 5.5's DelayedDelivery bootstep). */
  prepare(): Promise<void> {
    this.ladder ??= this.declareLadder().catch((err: unknown) => {
      this.ladder = null
      throw err
    })
    return this.ladder
  }

  /**
   * Celery 5.5 declares the ladder's queues as quorum queues by default, kombu
   * as classic ones where asked: whichever came first stays, so the other
   * type is tried when RabbitMQ says the first is not equivalent.
   */
  private async declareLadder(): Promise<void> {
    // In a cluster the ladder must be quorum: a classic queue lives on one
    // node, and a message routed to it while that node is down is dropped.
    const first = this.host.queueType ?? 'classic'
    try {
      await this.host.declareLadder(first)
    } catch (err) {
      if (!(err instanceof BrokerRequestError) || !/x-queue-type/.test(err.message)) throw err
      await this.host.declareLadder(first === 'classic' ? 'quorum' : 'classic')
    }
  }
}
