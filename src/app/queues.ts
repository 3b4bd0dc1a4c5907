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
