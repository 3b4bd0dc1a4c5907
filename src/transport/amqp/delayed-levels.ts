// kombu's delay ladder, as far as a reader of a broker needs it (tsq why): no amqplib here, so the
// package's public types do not reach amqplib's.

/** kombu's MAX_NUMBER_OF_BITS_TO_USE: one level (queue + exchange) per bit of the delay in seconds. */
export const DELAYED_DELIVERY_LEVELS = 28

/** kombu's level_name: the queue and the exchange of one level share it. */
export function levelName(level: number): string {
  if (!Number.isInteger(level) || level < 0) throw new RangeError(`level must be a non-negative integer, got ${level}`)
  return `celery_delayed_${level}`
}
