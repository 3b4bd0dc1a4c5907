// Parking lots on a virtual broker (Redis, file://), which has no
// dead-lettering or delayed queues of its own: messages held aside until a
// time (the events bus's retries and its archive), each kept as the kombu
// envelope it goes back to its queue as. The broker keeps the entries and moves
// a due one into its queue in one atomic step (a Lua script, a rename); what an
// entry holds, how a lot is trimmed and how it is read back are decided here.
import { randomBytes } from 'node:crypto'
import { decodeEnvelope, encodeEnvelope } from '../kombu-envelope.js'
import type { OutgoingMessage, ParkedMessage, Parking, ParkOptions } from '../transport.js'

/** One parked message as the broker keeps it. */
export interface ParkedEntry {
  id: string
  /** The queue it goes back to. */
  queue: string
  /** When it is due, ms since the epoch. */
  at: number
  /** The kombu envelope it goes back as. */
  envelope: string
}

/** What a park trims from its lot after adding: entries due before `minAt` (ms), then the oldest past `maxLength`. */
export interface ParkTrim {
  minAt?: number
  maxLength?: number
}

/** What a broker gives the virtual layer for parking: a lot's entries, kept in due order. */
export interface ParkingStore {
  add(lot: string, entry: ParkedEntry, priority: number, trim: ParkTrim): Promise<void>
  /** Moves every entry due at `now` into its queue, each atomically; and when the next one left is due. */
  releaseDue(lots: readonly string[], now: number): Promise<{ moved: number; nextAt: number | null }>
  /** The first `limit` entries (all without one), due order. */
  entries(lot: string, limit?: number): Promise<ParkedEntry[]>
  /** Removes the entries with these ids; how many went. */
  remove(lot: string, ids: ReadonlySet<string>): Promise<number>
  count(lot: string): Promise<number>
}

let parked = 0

/**
 * Sorts in the order this process parked them, then random. A lot is kept
 * in time order, and messages parked in the same millisecond (a burst of
 * failures into the archive) are ordered by their id: with random ids a
 * length trim (x-max-length) dropped an arbitrary one of them, not the
 * oldest, as RabbitMQ's does.
 */
export function parkedId(): string {
  parked += 1
  return `${parked.toString(36).padStart(8, '0')}${randomBytes(6).toString('hex')}`
}

export class VirtualParking implements Parking {
  constructor(
    private readonly store: ParkingStore,
    /** Throws when the transport is not open (the file broker's check; Redis's connection says it itself). */
    private readonly assertOpen: () => void = () => undefined,
  ) {}

  async park(
    lot: string,
    target: { queue: string; exchange: string; routingKey: string },
    message: OutgoingMessage,
    at: number,
    options: ParkOptions = {},
  ): Promise<void> {
    this.assertOpen()
    const trim: ParkTrim = {}
    if (options.maxAgeMs !== undefined) trim.minAt = Date.now() - options.maxAgeMs
    if (options.maxLength !== undefined) trim.maxLength = options.maxLength
    const entry: ParkedEntry = {
      id: parkedId(),
      queue: target.queue,
      at,
      envelope: encodeEnvelope(target.exchange, target.routingKey, message),
    }
    await this.store.add(lot, entry, message.properties.priority, trim)
  }

  async releaseDue(lots: readonly string[]): Promise<{ moved: number; nextAt: number | null }> {
    this.assertOpen()
    if (lots.length === 0) return { moved: 0, nextAt: null }
    return this.store.releaseDue(lots, Date.now())
  }

  async list(lot: string, options: { limit?: number } = {}): Promise<ParkedMessage[]> {
    this.assertOpen()
    if (options.limit !== undefined && options.limit <= 0) return []
    const out: ParkedMessage[] = []
    for (const entry of await this.store.entries(lot, options.limit)) {
      try {
        const m = decodeEnvelope(entry.envelope)
        out.push({
          id: entry.id,
          queue: entry.queue,
          at: entry.at,
          message: { body: m.body, properties: m.properties },
          exchange: m.exchange,
          routingKey: m.routingKey,
        })
      } catch {
        // What is not an envelope is not a message of the lot.
      }
    }
    return out
  }

  async drop(lot: string, ids: readonly string[]): Promise<number> {
    this.assertOpen()
    if (ids.length === 0) return 0
    return this.store.remove(lot, new Set(ids))
  }

  async count(lot: string): Promise<number> {
    this.assertOpen()
    return this.store.count(lot)
  }
}
