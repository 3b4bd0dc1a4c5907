// A task message as a transport hands it to the worker, without a broker:
// what unit tests of the worker's runner feed it. Settling (ack, reject) is
// the test's own, so it can count or hold it.
import { encodeTaskV2 } from '../../src/protocol/index.js'
import type { Delivery } from '../../src/transport/index.js'

export function taskDeliveryFields(
  taskName: string,
  args: unknown[] = [],
  options: { expires?: string } = {},
): Omit<Delivery, 'ack' | 'reject'> {
  const m = encodeTaskV2(taskName, { args, origin: 'gen@test', ...options })
  return {
    body: Buffer.from(m.body),
    properties: {
      contentType: m.contentType,
      contentEncoding: m.contentEncoding,
      headers: m.headers as Delivery['properties']['headers'],
      deliveryMode: 2 as const,
      priority: 0,
    },
    exchange: '',
    routingKey: 'celery',
    queue: 'celery',
    redelivered: false,
    deliveryTag: m.properties.correlationId,
  }
}
