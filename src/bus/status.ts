// What `tsq bus ls` shows of each service: its handler queues with depth and
// consumers, the events waiting at each retry step, and the archive's size,
// read from the broker (RabbitMQ's queues, or the parking lots of Redis and
// the file broker). Nothing is declared: a missing queue reads as absent.
import type { Transport } from '../transport/index.js'
import { countArchive } from './archive.js'
import { usesParking } from './failures.js'
import { archivedExchangeName, handlerQueueName, retryExchangeName, stepDelaySeconds } from './names.js'
import type { ServiceRecord } from './registry.js'
import { archiveEnabled, type BusSettings } from './settings.js'

export interface HandlerQueueStatus {
  event: string
  queue: string
  /** Ready messages; null when the queue does not exist. */
  messages: number | null
  /** null where the broker does not count consumers (Redis) or the queue does not exist. */
  consumers: number | null
}

export interface RetryStepStatus {
  step: number
  name: string
  delaySeconds: number
  /** Events waiting at this step; null when its queue does not exist. */
  messages: number | null
}

export interface ServiceStatus {
  service: string
  settings: BusSettings
  /** Known from a worker's record (else named on the command line: its handlers are unknown). */
  recorded: boolean
  handlers: HandlerQueueStatus[]
  retries: RetryStepStatus[]
  archive: { name: string; messages: number | null } | null
}

export async function serviceStatus(transport: Transport, record: ServiceRecord, recorded: boolean): Promise<ServiceStatus> {
  const { service, settings } = record
  const parked = usesParking(transport)
  const handlers: HandlerQueueStatus[] = []
  for (const event of record.events) {
    const queue = handlerQueueName(service, event)
    const status = transport.checkQueue ? await transport.checkQueue(queue) : null
    handlers.push({ event, queue, messages: status?.messageCount ?? null, consumers: status?.consumerCount ?? null })
  }
  const retries: RetryStepStatus[] = []
  for (let step = 0; step < settings.maxRetries; step += 1) {
    const name = retryExchangeName(service, step)
    const messages = parked ? await transport.parking!.count(name) : ((await transport.checkQueue?.(name))?.messageCount ?? null)
    retries.push({ step, name, delaySeconds: stepDelaySeconds(step), messages })
  }
  let archive: ServiceStatus['archive'] = null
  if (archiveEnabled(settings)) {
    const name = archivedExchangeName(service)
    const exists = parked || (await transport.checkQueue?.(name)) !== null
    archive = { name, messages: exists ? await countArchive(transport, service, { ttlMs: settings.archiveTtlMs }) : null }
  }
  return { service, settings, recorded, handlers, retries, archive }
}
