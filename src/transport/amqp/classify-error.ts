// amqplib reports every failure as a plain Error; this sorts them into the two
// recoveries tsq knows (kombu's channel_errors vs connection_errors).
import { BrokerConnectionError, BrokerRequestError, TransportClosedError } from '../errors.js'

/** AMQP 0-9-1 reply codes that close only the channel: the request itself was wrong. */
const CHANNEL_REPLY_CODES: Record<number, string> = {
  311: 'CONTENT_TOO_LARGE',
  312: 'NO_ROUTE',
  313: 'NO_CONSUMERS',
  403: 'ACCESS_REFUSED',
  404: 'NOT_FOUND',
  405: 'RESOURCE_LOCKED',
  406: 'PRECONDITION_FAILED',
}

interface AmqplibError extends Error {
  code?: unknown
}

function replyCodeOf(err: unknown): number | undefined {
  if (!(err instanceof Error)) return undefined
  const code = (err as AmqplibError).code
  return typeof code === 'number' ? code : undefined
}

/** The text RabbitMQ sent, e.g. `PRECONDITION_FAILED - inequivalent arg 'durable' ...`. */
function serverText(message: string): string {
  const quoted = /with message "(.*)"$/s.exec(message)
  return (quoted?.[1] ?? message).replace(/\s+/g, ' ').trim()
}

/** True when the error is the broker refusing this request (channel-level), not a lost connection. */
export function isChannelError(err: unknown): boolean {
  const code = replyCodeOf(err)
  return code !== undefined && code in CHANNEL_REPLY_CODES
}

/** amqplib's error for a basic.nack: the broker answered, and it does not have the message. */
export function isNack(err: unknown): boolean {
  return err instanceof Error && err.message === 'message nacked'
}

/**
 * Maps an amqplib error to a tsq transport error. `what` names the operation
 * for the message (`declare queue 'x'`).
 */
export function classifyAmqpError(err: unknown, what: string): Error {
  if (err instanceof BrokerRequestError || err instanceof BrokerConnectionError || err instanceof TransportClosedError) {
    return err
  }
  const code = replyCodeOf(err)
  const message = err instanceof Error ? err.message : String(err)
  if (isNack(err)) return new BrokerRequestError('NACKED', `${what}: the broker refused the message (basic.nack)`, { cause: err })
  if (code !== undefined && code in CHANNEL_REPLY_CODES) {
    return new BrokerRequestError(CHANNEL_REPLY_CODES[code]!, `${what}: ${code} ${serverText(message)}`, { cause: err })
  }
  return new BrokerConnectionError(`${what}: ${serverText(message)}`, { cause: err })
}

/** The one-line reason a connection attempt failed, for `connect()`'s error. */
export function describeConnectFailure(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err)
  const sysCode = err instanceof Error ? (err as AmqplibError).code : undefined
  if (sysCode === 'ECONNREFUSED') return 'connection refused (is RabbitMQ running?)'
  if (sysCode === 'ENOTFOUND' || sysCode === 'EAI_AGAIN') return 'host not found'
  if (sysCode === 'ETIMEDOUT') return 'connection timed out'
  // The broker's reply text (`NOT_ALLOWED - vhost x not found`), as Celery prints it; a refused login adds what to check.
  const text = serverText(message)
  if (/ACCESS[-_]REFUSED|\b403\b/.test(message))
    return `${/ACCESS_REFUSED/.test(text) ? text : 'access refused'} (check the user name and password)`
  if (/NOT[-_]ALLOWED|\b530\b/.test(message))
    return /NOT_ALLOWED/.test(text) ? text : 'not allowed (check that the vhost exists and the user may use it)'
  return text
}

/**
 * RabbitMQ (3.8.15 and later) closes a channel whose delivery stayed
 * unacknowledged past `consumer_timeout` with `PRECONDITION_FAILED - delivery
 * acknowledgement on channel 1 timed out. Timeout value used: 1800000 ms`.
 * The broker's timeout is not readable any other way by a client, so the
 * worker learns it from here.
 */
export function ackTimeoutOf(reason: Error | null): { ackTimeoutMs?: number } {
  if (!reason || !/delivery acknowledgement on channel \d+ timed out/i.test(reason.message)) return {}
  const used = /Timeout value used: (\d+) ms/i.exec(reason.message)
  return { ackTimeoutMs: used ? Number(used[1]) : 0 }
}
