// amqplib's message properties -> MessageProperties (the way out: direct-publish.ts).
import type { MessageProperties as AmqplibProperties } from 'amqplib'
import { setOptionalProperties, type HeaderValue, type Headers, type MessageProperties, type QueueArguments } from '../transport.js'
import { unreadableReason } from './field-table.js'

/**
 * The field-table codec (field-table.ts) gives plain values but for byte
 * strings (`x`), which the contract's HeaderValue carries as text; tagged
 * objects are amqplib's form, kept for tables it decoded itself.
 */
function plainHeaderValue(value: unknown): HeaderValue {
  if (value === null || value === undefined) return null
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value
  // Exact only where a double would change it, as the codec and the body's integers do.
  if (typeof value === 'bigint')
    return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value
  if (Buffer.isBuffer(value)) return value.toString('utf8')
  if (Array.isArray(value)) return value.map(plainHeaderValue)
  if (typeof value === 'object') {
    const record = value as Record<string, unknown>
    if (record['!'] === 'timestamp' && typeof record.value === 'number') return record.value
    if (record['!'] === 'decimal' && typeof record.value === 'object' && record.value !== null) {
      const { places, digits } = record.value as { places: number; digits: number }
      return digits / 10 ** places
    }
    return plainHeaders(record)
  }
  return String(value)
}

/**
 * Converted in place: the table is this delivery's own, just decoded by
 * amqplib, and nearly every value is plain already (a copy of every task's
 * headers showed in the worker's profile).
 */
function plainHeaders(table: Record<string, unknown> | undefined): Headers {
  if (!table) return {}
  for (const key in table) {
    const value = table[key]
    if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') continue
    table[key] = plainHeaderValue(value)
  }
  return table as Headers
}

export function fromAmqplibProperties(props: AmqplibProperties): MessageProperties {
  const unreadable = unreadableReason(props.headers)
  // No conditional spread at the head of the literal: V8 builds that through a slow clone, per delivery.
  const result: MessageProperties = {
    contentType: typeof props.contentType === 'string' ? props.contentType : '',
    contentEncoding: typeof props.contentEncoding === 'string' ? props.contentEncoding : '',
    headers: plainHeaders(props.headers as Record<string, unknown> | undefined),
    deliveryMode: props.deliveryMode === 2 ? 2 : 1,
    priority: typeof props.priority === 'number' ? props.priority : 0,
  }
  setOptionalProperties(result, props)
  if (unreadable !== undefined) result.unreadableHeaders = unreadable
  return result
}

/**
 * Queue arguments typed as py-amqp writes them (signed 32-bit `I` when it fits,
 * strings as long strings `S`), so the table RabbitMQ stores matches the one
 * Celery declares.
 */
export function toQueueArguments(args: QueueArguments | undefined): Record<string, unknown> | undefined {
  if (!args) return undefined
  const table: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(args)) {
    if (typeof value === 'string') {
      table[key] = value
      continue
    }
    if (typeof value !== 'number') continue
    const fitsInt32 = Number.isInteger(value) && value >= -2_147_483_647 && value <= 2_147_483_647
    table[key] = Number.isInteger(value) ? { '!': fitsInt32 ? 'int' : 'long', value } : value
  }
  return table
}
