// What `tsq archive` does with a service's archive, on every broker: list,
// show, replay (back to the handler queue with the retry count reset) and
// purge. On RabbitMQ the archive is the queue `S:archived`, read by taking
// its messages unacked and giving back what stays (queue-reader.ts); on
// Redis and the file broker, the parking lot `S:archived`. A replayed event
// is published (confirmed) before its archived copy is removed, so a replay
// killed half-way loses nothing: at worst an event is both replayed and
// still archived.
import { createHash } from 'node:crypto'
import { codedError } from '../protocol/index.js'
import type { Delivery, OutgoingMessage, Transport } from '../transport/index.js'
import { ArchivedEventNotFoundError, BusError } from './errors.js'
import { usesParking } from './failures.js'
import { describeArchived, resendFromMessage, type ArchivedEvent } from './messages.js'
import { archivedExchangeName, handlerQueueName } from './names.js'
import { readQueue } from './queue-reader.js'

export interface ArchiveFilter {
  event?: string
  limit?: number
}

/**
 * Where the archive is a parking lot (Redis, file), its age bound is applied
 * when an event is archived; a reader that knows the bound (the service's
 * AMQP_EVENTS_ARCHIVED_MESSAGE_TTL) drops what has expired since.
 */
export interface ArchiveBounds {
  ttlMs?: number
}

/** One archived message and how to remove it. */
interface Held {
  event: ArchivedEvent
  message: { body: Buffer; properties: OutgoingMessage['properties'] }
  remove(): Promise<void>
}

/** A message with no id of its own (not a task message) is known by a hash of its bytes, the same on every read. */
function contentId(message: { body: Buffer }): string {
  return `sha1-${createHash('sha1').update(message.body).digest('hex').slice(0, 16)}`
}

/**
 * Hands every archived message of `service` to `visit`, oldest first; what it
 * removes is gone, the rest stays in the archive, in its order.
 */
async function withArchive<T>(
  transport: Transport,
  service: string,
  bounds: ArchiveBounds,
  visit: (held: Held[]) => Promise<T>,
): Promise<T> {
  const lot = archivedExchangeName(service)
  if (usesParking(transport)) {
    const parking = transport.parking!
    let parked = await parking.list(lot)
    if (bounds.ttlMs) {
      const oldest = Date.now() - bounds.ttlMs
      const expired = parked.filter((p) => p.at < oldest)
      if (expired.length)
        await parking.drop(
          lot,
          expired.map((p) => p.id),
        )
      parked = parked.filter((p) => p.at >= oldest)
    }
    const held = parked.map((p) => {
      const event = describeArchived(p.message, service, contentId(p.message))
      event.archivedAt ??= new Date(p.at).toISOString()
      return {
        event,
        message: p.message,
        remove: async () => {
          await parking.drop(lot, [p.id])
        },
      }
    })
    return visit(held)
  }
  if (!(await transport.checkQueue?.(lot))) return visit([])
  return readQueue(transport, lot, (deliveries: Delivery[]) =>
    visit(
      deliveries.map((d) => ({
        event: describeArchived(d, service, contentId(d)),
        message: { body: d.body, properties: d.properties },
        remove: () => d.ack(),
      })),
    ),
  )
}

function matches(e: ArchivedEvent, filter: ArchiveFilter): boolean {
  return filter.event === undefined || e.event === filter.event
}

export async function listArchive(
  transport: Transport,
  service: string,
  filter: ArchiveFilter & ArchiveBounds = {},
): Promise<ArchivedEvent[]> {
  return withArchive(transport, service, filter, async (held) => {
    const found = held.map((h) => h.event).filter((e) => matches(e, filter))
    return filter.limit !== undefined ? found.slice(0, filter.limit) : found
  })
}

export async function countArchive(transport: Transport, service: string, bounds: ArchiveBounds = {}): Promise<number> {
  const lot = archivedExchangeName(service)
  if (usesParking(transport)) return bounds.ttlMs ? (await listArchive(transport, service, bounds)).length : transport.parking!.count(lot)
  return (await transport.checkQueue?.(lot))?.messageCount ?? 0
}

/** The archived events with these ids (every copy, oldest first); throws when one is not there. */
export async function showArchived(
  transport: Transport,
  service: string,
  ids: readonly string[],
  bounds: ArchiveBounds = {},
): Promise<ArchivedEvent[]> {
  const found = await withArchive(transport, service, bounds, async (held) => held.map((h) => h.event).filter((e) => ids.includes(e.id)))
  const missing = ids.filter((id) => !found.some((e) => e.id === id))
  if (missing.length) throw new ArchivedEventNotFoundError(missing, service)
  return found
}

export interface ReplaySelection extends ArchiveBounds {
  ids?: readonly string[]
  all?: boolean
  event?: string
}

export interface ReplayResult {
  replayed: ArchivedEvent[]
  /** Archived copies of an event replayed once (at-least-once delivery can archive one event twice). */
  duplicates: number
}

export class UnreplayableError extends codedError('BAD_ARGUMENT', BusError) {}

/**
 * Sends the selected archived events back to their handler queues with their
 * retries reset to 0 (each confirmed, then removed from the archive), as a
 * fixed handler's service then runs them once. Ids not in the archive throw
 * ArchivedEventNotFoundError before anything is sent.
 */
export async function replayArchive(
  transport: Transport,
  service: string,
  selection: ReplaySelection,
  onReplayed?: (e: ArchivedEvent) => void,
): Promise<ReplayResult> {
  return withArchive(transport, service, selection, async (held) => {
    const chosen = held.filter(
      (h) => (selection.all || selection.ids?.includes(h.event.id)) && matches(h.event, { event: selection.event }),
    )
    const missing = (selection.ids ?? []).filter((id) => !chosen.some((h) => h.event.id === id))
    if (missing.length) throw new ArchivedEventNotFoundError(missing, service)
    const unreadable = chosen.filter((h) => h.event.retries === null)
    if (unreadable.length)
      throw new UnreplayableError(
        `archived message ${unreadable[0]!.event.id} is not a task message (${unreadable[0]!.event.reason ?? 'unreadable'}): it cannot be replayed; \`tsq archive purge\` removes it`,
      )
    const queues = new Map<string, boolean>()
    for (const h of chosen) {
      const queue = handlerQueueName(service, h.event.event)
      if (!queues.has(queue)) queues.set(queue, transport.checkQueue ? (await transport.checkQueue(queue)) !== null : true)
      if (!queues.get(queue))
        throw new UnreplayableError(
          `the handler queue ${queue} does not exist: start a worker of ${service} that handles ${h.event.event} first`,
        )
    }
    const sent = new Set<string>()
    const replayed: ArchivedEvent[] = []
    let duplicates = 0
    for (const h of chosen) {
      const key = `${h.event.id}\n${h.event.event}`
      if (!sent.has(key)) {
        const message = resendFromMessage(h.message, { retries: 0, eta: null, replayedAt: new Date() })
        await transport.publish('', handlerQueueName(service, h.event.event), message)
        sent.add(key)
        replayed.push(h.event)
        onReplayed?.(h.event)
      } else duplicates += 1
      await h.remove()
    }
    return { replayed, duplicates }
  })
}

/** Removes archived events (all, or one event's); returns how many. */
export async function purgeArchive(
  transport: Transport,
  service: string,
  filter: { event?: string } & ArchiveBounds = {},
): Promise<number> {
  if (filter.event === undefined && !usesParking(transport)) {
    const lot = archivedExchangeName(service)
    if (!(await transport.checkQueue?.(lot))) return 0
    return transport.purge(lot)
  }
  return withArchive(transport, service, filter, async (held) => {
    let removed = 0
    for (const h of held) {
      if (!matches(h.event, filter)) continue
      await h.remove()
      removed += 1
    }
    return removed
  })
}
