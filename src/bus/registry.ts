// Where `tsq bus ls` finds the services: each tsq worker of an events app
// records its service (name, handled events, settings) when it starts.
// RabbitMQ: messages in the queue `tsq.bus.services` (at most 1,000, the
// oldest dropped; the newest record of a service wins). Redis and the file
// broker: the parking lot `tsq.bus.services`, one record per service. A
// Python service records nothing: name it with `--service`.
import type { OutgoingMessage, Transport } from '../transport/index.js'
import { readQueue } from './queue-reader.js'
import type { BusSettings } from './settings.js'

export const REGISTRY_NAME = 'tsq.bus.services'
const REGISTRY_MAX = 1000

export interface ServiceRecord {
  service: string
  events: string[]
  settings: BusSettings
  /** When it was recorded (ISO 8601). */
  at?: string
}

function encode(record: ServiceRecord): OutgoingMessage {
  return {
    body: Buffer.from(JSON.stringify({ ...record, at: new Date().toISOString() }), 'utf8'),
    properties: {
      contentType: 'application/json',
      contentEncoding: 'utf-8',
      headers: { service: record.service },
      deliveryMode: 2,
      priority: 0,
    },
  }
}

/** Bytes a service record may hold: a name, its settings and event names. */
const MAX_RECORD_BYTES = 1024 * 1024

function decode(body: Buffer): ServiceRecord | undefined {
  if (body.length > MAX_RECORD_BYTES) return undefined
  try {
    const value = JSON.parse(body.toString('utf8')) as ServiceRecord
    return typeof value?.service === 'string' && Array.isArray(value.events) && typeof value.settings === 'object' ? value : undefined
  } catch {
    return undefined
  }
}

async function declareRegistryQueue(transport: Transport): Promise<void> {
  await transport.declareQueue({
    name: REGISTRY_NAME,
    durable: true,
    exclusive: false,
    autoDelete: false,
    arguments: { 'x-max-length': REGISTRY_MAX },
  })
}

export async function recordService(transport: Transport, record: ServiceRecord): Promise<void> {
  if (transport.kind !== 'amqp' && transport.parking) {
    const parking = transport.parking
    const stale = (await parking.list(REGISTRY_NAME)).filter((p) => decode(p.message.body)?.service === record.service).map((p) => p.id)
    await parking.park(REGISTRY_NAME, { queue: '', exchange: '', routingKey: '' }, encode(record), Date.now(), { maxLength: REGISTRY_MAX })
    if (stale.length) await parking.drop(REGISTRY_NAME, stale)
    return
  }
  await declareRegistryQueue(transport)
  await transport.publish('', REGISTRY_NAME, encode(record))
}

/** Every recorded service, its newest record, by name. */
export async function listServices(transport: Transport): Promise<ServiceRecord[]> {
  const records: ServiceRecord[] = []
  if (transport.kind !== 'amqp' && transport.parking) {
    for (const p of await transport.parking.list(REGISTRY_NAME)) {
      const r = decode(p.message.body)
      if (r) records.push(r)
    }
  } else {
    if (!(await transport.checkQueue?.(REGISTRY_NAME))) return []
    await readQueue(transport, REGISTRY_NAME, async (deliveries) => {
      for (const d of deliveries) {
        const r = decode(d.body)
        if (r) records.push(r)
      }
    })
  }
  const newest = new Map<string, ServiceRecord>()
  for (const r of records) {
    const seen = newest.get(r.service)
    if (!seen || (r.at ?? '') >= (seen.at ?? '')) newest.set(r.service, r)
  }
  return [...newest.values()].sort((a, b) => (a.service < b.service ? -1 : a.service > b.service ? 1 : 0))
}

/** Removes every record of `service` (it was taken down for good); returns how many. */
export async function forgetService(transport: Transport, service: string): Promise<number> {
  if (transport.kind !== 'amqp' && transport.parking) {
    const ids = (await transport.parking.list(REGISTRY_NAME)).filter((p) => decode(p.message.body)?.service === service).map((p) => p.id)
    return transport.parking.drop(REGISTRY_NAME, ids)
  }
  if (!(await transport.checkQueue?.(REGISTRY_NAME))) return 0
  return readQueue(transport, REGISTRY_NAME, async (deliveries) => {
    let removed = 0
    for (const d of deliveries) {
      if (decode(d.body)?.service !== service) continue
      await d.ack()
      removed += 1
    }
    return removed
  })
}
