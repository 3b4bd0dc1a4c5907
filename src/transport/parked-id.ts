// The id a parked message is kept under, on the brokers that park messages
// themselves (Redis, the embedded broker).
import { randomBytes } from 'node:crypto'

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
