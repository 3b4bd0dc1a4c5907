import type { ExchangeSpec, QueueSpec, Transport } from '../transport/index.js'

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

const declaredOn = new WeakMap<Transport, Set<string>>()

/** `maybe_declare`: once per connection, as kombu's producer does. */
export async function declareTaskQueue(transport: Transport, name: string): Promise<void> {
  let seen = declaredOn.get(transport)
  if (!seen) declaredOn.set(transport, (seen = new Set()))
  if (seen.has(name)) return
  const { exchange, queue, routingKey } = taskQueue(name)
  await transport.declareExchange(exchange)
  await transport.declareQueue(queue)
  await transport.bindQueue(queue.name, exchange.name, routingKey)
  seen.add(name)
}
