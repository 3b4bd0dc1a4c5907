import type { ExchangeSpec, ExchangeType, QueueArguments, QueueSpec, Transport } from '../transport/index.js'
import { codedError } from '../protocol/index.js'

/** One binding of a queue: the exchange it is bound to and the key. */
export interface QueueBinding {
  exchange: ExchangeSpec
  routingKey: string
}

/**
 * A queue as kombu's `Queue` declares it (Celery's task_queues): the queue's
 * flags and arguments, its bindings, and what a consumer asks for. A tsq
 * worker declares exactly this, so RabbitMQ sees the same queue as from a
 * Python worker of the same app (an x-max-priority missing on one side is
 * the 406 PRECONDITION_FAILED that stops the other).
 */
export interface QueueDefinition {
  queue: QueueSpec
  /** The exchange sends go to (kombu's `queue.exchange`); '' for a queue given as bindings. */
  exchange: ExchangeSpec
  routingKey: string
  bindings: QueueBinding[]
  consumerArguments?: Record<string, string | number>
  /** kombu's no_declare: the queue is used as it stands on the broker, never declared. */
  noDeclare: boolean
  /** The exchange's delivery_mode, when it names one. */
  deliveryMode?: 1 | 2
}

export class QueueSettingError extends codedError('CONFIG') {}

const EXCHANGE_TYPES = new Set<ExchangeType>(['direct', 'topic', 'fanout'])

function exchangeType(value: unknown, where: string): ExchangeType {
  if (value === undefined || value === null) return 'direct'
  if (typeof value === 'string' && EXCHANGE_TYPES.has(value as ExchangeType)) return value as ExchangeType
  throw new QueueSettingError(`${where}: exchange type ${JSON.stringify(value)} is not direct, topic or fanout`)
}

function deliveryMode(value: unknown): 1 | 2 | undefined {
  if (value === 1 || value === 'transient') return 1
  if (value === 2 || value === 'persistent') return 2
  return undefined
}

function numberArgs(value: unknown, where: string): Record<string, string | number> | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'object' || Array.isArray(value)) throw new QueueSettingError(`${where}: expected a map of argument to value`)
  const out: Record<string, string | number> = {}
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (typeof v !== 'number' && typeof v !== 'string')
      throw new QueueSettingError(`${where}: ${k} = ${JSON.stringify(v)} is not a number or string`)
    out[k] = v
  }
  return out
}

/** The settings that shape queues, read once from an app's conf. */
export interface QueueSettings {
  defaultQueue: string
  /** task_default_exchange (default: the default queue's name) and its type. */
  defaultExchange: string
  defaultExchangeType: ExchangeType
  /** task_default_routing_key (default: the default queue's name). */
  defaultRoutingKey: string | undefined
  createMissing: boolean
  maxPriority: number | undefined
  defaultDeliveryMode: 1 | 2
  defined: Map<string, QueueDefinition>
}

/**
 * An exchange as task_queues writes it: a name, or `{ name, type, durable,
 * auto_delete, delivery_mode }` (kombu's Exchange), with the queue entry's
 * own `exchange_type`, `exchange_durable`, `exchange_auto_delete` as
 * Queue.from_dict reads them.
 */
function exchangeOf(
  entry: Record<string, unknown>,
  s: Pick<QueueSettings, 'defaultExchange' | 'defaultExchangeType'>,
  where: string,
  mapForm: boolean,
): { spec: ExchangeSpec; deliveryMode?: 1 | 2 } {
  const raw = entry.exchange
  const obj = raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {}
  const name = typeof raw === 'string' ? raw : typeof obj.name === 'string' ? obj.name : ''
  // kombu's Queues._add: a queue with no exchange (or '') takes the default exchange.
  if (name === '') return { spec: { name: s.defaultExchange, type: s.defaultExchangeType, durable: true, autoDelete: false } }
  // Only Queue.from_dict (the map form) gives the queue's durable and auto_delete to its exchange too.
  const durable = obj.durable ?? entry.exchange_durable ?? (mapForm ? entry.durable : undefined)
  const autoDelete = obj.auto_delete ?? entry.exchange_auto_delete ?? (mapForm ? entry.auto_delete : undefined)
  const dm = deliveryMode(obj.delivery_mode ?? entry.delivery_mode)
  return {
    spec: { name, type: exchangeType(obj.type ?? entry.exchange_type, where), durable: durable !== false, autoDelete: autoDelete === true },
    ...(dm ? { deliveryMode: dm } : {}),
  }
}

/** One task_queues entry as kombu's Queue (or Queue.from_dict for the map form) makes it. */
function definitionOf(name: string, entry: Record<string, unknown>, s: Omit<QueueSettings, 'defined'>, mapForm = false): QueueDefinition {
  const where = `task_queues[${JSON.stringify(name)}]`
  const { spec: exchange, deliveryMode: dm } = exchangeOf(entry, s, where, mapForm)
  const rk = entry.routing_key ?? entry.binding_key
  // Queue.from_dict (the map form) keys by the name; a Queue object without a
  // key takes task_default_routing_key, which Celery defaults to the default queue's name.
  const routingKey = typeof rk === 'string' && rk !== '' ? rk : mapForm ? name : (s.defaultRoutingKey ?? s.defaultQueue)
  const durable = (entry.queue_durable ?? entry.durable) !== false
  const exclusive = entry.exclusive === true
  // kombu: exclusive implies auto_delete.
  const autoDelete = exclusive || (entry.queue_auto_delete ?? entry.auto_delete) === true
  const args: QueueArguments = { ...(numberArgs(entry.queue_arguments, `${where}.queue_arguments`) ?? {}) }
  // kombu's prepare_queue_arguments: seconds become milliseconds.
  if (typeof entry.expires === 'number') args['x-expires'] = Math.trunc(entry.expires * 1000)
  if (typeof entry.message_ttl === 'number') args['x-message-ttl'] = Math.trunc(entry.message_ttl * 1000)
  if (typeof entry.max_length === 'number') args['x-max-length'] = entry.max_length
  if (typeof entry.max_priority === 'number') args['x-max-priority'] = entry.max_priority
  if (s.maxPriority !== undefined && args['x-max-priority'] === undefined) args['x-max-priority'] = s.maxPriority
  if (args['x-queue-type'] === 'quorum')
    checkQuorum(where, args, { durable, exclusive, autoDelete }, entry.max_priority === undefined && s.maxPriority !== undefined)
  let bindings: QueueBinding[] = [{ exchange, routingKey }]
  if (Array.isArray(entry.bindings) && entry.bindings.length) {
    bindings = entry.bindings.map((b, i) => {
      if (!b || typeof b !== 'object') throw new QueueSettingError(`${where}.bindings[${i}]: expected { exchange, routing_key }`)
      const binding = b as Record<string, unknown>
      const brk = binding.routing_key
      return { exchange: exchangeOf(binding, s, `${where}.bindings[${i}]`, false).spec, routingKey: typeof brk === 'string' ? brk : '' }
    })
  }
  const consumerArguments = numberArgs(entry.consumer_arguments, `${where}.consumer_arguments`)
  // kombu: a Queue given bindings has no exchange of its own, so Celery sends to
  // it through the default exchange by its name.
  const own =
    Array.isArray(entry.bindings) && entry.bindings.length
      ? { exchange: { name: '', type: 'direct' as const, durable: true, autoDelete: false }, routingKey: name }
      : bindings[0]!
  return {
    queue: { name, durable, exclusive, autoDelete, ...(Object.keys(args).length ? { arguments: args } : {}) },
    exchange: own.exchange,
    routingKey: own.routingKey,
    bindings,
    ...(consumerArguments ? { consumerArguments } : {}),
    noDeclare: entry.no_declare === true,
    ...(dm ? { deliveryMode: dm } : {}),
  }
}

/**
 * RabbitMQ's rules for a quorum queue, said before the broker's 406 says them
 * less clearly: replicated, so durable and shared; and no x-max-priority,
 * which RabbitMQ (before 4.0) refuses outright.
 */
function checkQuorum(
  where: string,
  args: QueueArguments,
  flags: { durable: boolean; exclusive: boolean; autoDelete: boolean },
  priorityFromDefault: boolean,
): void {
  if (args['x-max-priority'] !== undefined) {
    const from = priorityFromDefault ? `task_queue_max_priority = ${args['x-max-priority']}` : `x-max-priority = ${args['x-max-priority']}`
    throw new QueueSettingError(
      `${where}: a quorum queue cannot have priorities (${from}); make the queue classic or drop its max priority`,
    )
  }
  if (!flags.durable || flags.exclusive || flags.autoDelete) {
    throw new QueueSettingError(`${where}: a quorum queue must be durable and neither exclusive nor auto_delete`)
  }
}

/** Celery 5.5's task_default_queue_type: 'classic' (the default) or 'quorum'. */
function queueType(value: unknown): 'classic' | 'quorum' {
  if (value === undefined || value === null || value === 'classic') return 'classic'
  if (value === 'quorum') return 'quorum'
  throw new QueueSettingError(`task_default_queue_type = ${JSON.stringify(value)}: expected 'classic' or 'quorum'`)
}

/** The queue is a RabbitMQ quorum queue (x-queue-type in its arguments, as Celery 5.5's detect_quorum_queues reads it). */
export function isQuorumQueue(d: Pick<QueueDefinition, 'queue'> | undefined): boolean {
  return d?.queue.arguments?.['x-queue-type'] === 'quorum'
}

/** Celery 5.5's detect_quorum_queues: does any queue the app defines have x-queue-type quorum? */
export function usesQuorumQueues(settings: QueueSettings): boolean {
  return [...settings.defined.values()].some(isQuorumQueue)
}

function positiveInt(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 255) return value
  throw new QueueSettingError(`${name} = ${JSON.stringify(value)}: expected a whole number from 0 to 255`)
}

/**
 * task_queues and the task_default_* settings that shape queues, as Celery's
 * `app.amqp.Queues` reads them. task_queues is a list of queue entries, each
 * `{ name, exchange, exchange_type, routing_key, bindings, queue_arguments,
 * consumer_arguments, durable, auto_delete, exclusive, no_declare, max_priority }`,
 * or, as Celery also takes it, a map of name to such an entry.
 */
export function queueSettings(conf: Record<string, unknown>, defaultQueue: string): QueueSettings {
  const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined)
  const base: Omit<QueueSettings, 'defined'> = {
    defaultQueue,
    defaultExchange: str(conf.task_default_exchange) ?? defaultQueue,
    defaultExchangeType: exchangeType(conf.task_default_exchange_type, 'task_default_exchange_type'),
    defaultRoutingKey: str(conf.task_default_routing_key),
    createMissing: conf.task_create_missing_queues !== false,
    maxPriority: positiveInt(conf.task_queue_max_priority, 'task_queue_max_priority'),
    defaultDeliveryMode: deliveryMode(conf.task_default_delivery_mode) ?? 2,
  }
  if (
    conf.task_default_delivery_mode !== undefined &&
    conf.task_default_delivery_mode !== null &&
    deliveryMode(conf.task_default_delivery_mode) === undefined
  ) {
    throw new QueueSettingError(
      `task_default_delivery_mode = ${JSON.stringify(conf.task_default_delivery_mode)}: expected 1, 2, 'transient' or 'persistent'`,
    )
  }
  const defined = new Map<string, QueueDefinition>()
  const raw = conf.task_queues
  if (raw !== undefined && raw !== null) {
    const entries: Array<[string, Record<string, unknown>]> = []
    const mapForm = !Array.isArray(raw)
    if (Array.isArray(raw)) {
      for (const [i, q] of raw.entries()) {
        const name = typeof q === 'string' ? q : q && typeof q === 'object' ? (q as Record<string, unknown>).name : undefined
        if (typeof name !== 'string' || !name) throw new QueueSettingError(`task_queues[${i}]: a queue needs a name`)
        entries.push([name, typeof q === 'string' ? {} : (q as Record<string, unknown>)])
      }
    } else if (typeof raw === 'object') {
      for (const [name, q] of Object.entries(raw as Record<string, unknown>))
        entries.push([name, q && typeof q === 'object' ? (q as Record<string, unknown>) : {}])
    } else throw new QueueSettingError('task_queues: expected a list of queues or a map of name to queue')
    for (const [name, entry] of entries) defined.set(name, definitionOf(name, entry, base, mapForm))
  }
  // Celery's Queues(): with no task_queues, the default queue on the default exchange.
  // Celery 5.5: task_default_queue_type shapes that default queue only.
  if (defined.size === 0) {
    const quorum = queueType(conf.task_default_queue_type) === 'quorum'
    defined.set(
      defaultQueue,
      definitionOf(
        defaultQueue,
        {
          exchange: base.defaultExchange,
          exchange_type: base.defaultExchangeType,
          ...(quorum ? { queue_arguments: { 'x-queue-type': 'quorum' } } : {}),
        },
        base,
      ),
    )
  } else queueType(conf.task_default_queue_type)
  return { ...base, defined }
}

/**
 * The definition a name has: its task_queues entry, else (task_create_missing_queues)
 * Celery's automatic `Queue(q, Exchange(q), q)` with task_queue_max_priority, else
 * a refusal, as Celery's QueueNotFound.
 */
export function queueDefinition(settings: QueueSettings, name: string): QueueDefinition {
  const known = settings.defined.get(name)
  if (known) return known
  if (!settings.createMissing)
    throw new QueueSettingError(`queue ${JSON.stringify(name)} is not in task_queues and task_create_missing_queues is False`)
  return definitionOf(name, { exchange: name, exchange_type: 'direct', routing_key: name }, settings)
}

/**
 * Celery's automatic queue for a name (spec §1.2): `Queue(q, Exchange(q, 'direct'), q)`,
 * durable. Declared with exactly these flags or RabbitMQ answers 406.
 */
export function taskQueue(name: string): { exchange: ExchangeSpec; queue: QueueSpec; routingKey: string } {
  return {
    exchange: { name, type: 'direct', durable: true, autoDelete: false },
    queue: { name, durable: true, exclusive: false, autoDelete: false },
    routingKey: name,
  }
}

/**
 * Celery's `worker_direct(hostname)`: `Queue('<hostname>.dq2', Exchange('C.dq2'),
 * hostname)`, the queue a `worker_direct` worker consumes so that a client can
 * send a task to that one node (`queue=worker_direct('w1@host')`).
 */
export function workerDirectQueue(nodename: string): { name: string; exchange: string; exchangeType: 'direct'; routingKey: string } {
  return { name: `${nodename}.dq2`, exchange: 'C.dq2', exchangeType: 'direct', routingKey: nodename }
}

/** Declares a queue as its definition says: exchanges, the queue, its bindings (nothing for no_declare). */
export async function declareDefinition(transport: Transport, d: QueueDefinition): Promise<void> {
  if (d.noDeclare) return
  const seenExchanges = new Set<string>()
  for (const b of d.bindings) {
    // The default exchange ('') is the broker's own, never declared.
    if (b.exchange.name === '' || seenExchanges.has(b.exchange.name)) continue
    await transport.declareExchange(b.exchange)
    seenExchanges.add(b.exchange.name)
  }
  await transport.declareQueue(d.queue)
  for (const b of d.bindings) if (b.exchange.name !== '') await transport.bindQueue(d.queue.name, b.exchange.name, b.routingKey)
}

const declaredOn = new WeakMap<Transport, Map<string, Promise<void>>>()
/** Queues whose declaration has completed: a send to one needs no wait at all. */
const doneOn = new WeakMap<Transport, Set<string>>()

/** `maybe_declare`: once per connection, as kombu's producer does. */
export function declareTaskQueue(transport: Transport, name: string, definition?: QueueDefinition): Promise<void> {
  let seen = declaredOn.get(transport)
  if (!seen) declaredOn.set(transport, (seen = new Map()))
  // The declaration itself is kept, so a thousand concurrent first sends to a
  // queue wait on one declare instead of each sending its own.
  let declared = seen.get(name)
  if (!declared) {
    declared = declareOnce(transport, name, definition)
    seen.set(name, declared)
    declared.then(
      () => {
        let done = doneOn.get(transport)
        if (!done) doneOn.set(transport, (done = new Set()))
        done.add(name)
      },
      () => seen.delete(name),
    )
  }
  return declared
}

/** declareTaskQueue(transport, name) has completed: the send can publish at once. */
export function isTaskQueueDeclared(transport: Transport, name: string): boolean {
  return doneOn.get(transport)?.has(name) === true
}

async function declareOnce(transport: Transport, name: string, definition?: QueueDefinition): Promise<void> {
  if (definition) await declareDefinition(transport, definition)
  else {
    const { exchange, queue, routingKey } = taskQueue(name)
    await transport.declareExchange(exchange)
    await transport.declareQueue(queue)
    await transport.bindQueue(queue.name, exchange.name, routingKey)
  }
}
