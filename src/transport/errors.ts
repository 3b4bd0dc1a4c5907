// Transport errors, ranked by the recovery they need (rabbitmq-client's habit):
// a request error is the caller's fault and never retried; a connection error
// is retried with backoff.
import { codedError, ExitCode, exitCodeOfCode, TsqError } from '../protocol/index.js'

export class TsqTransportError extends TsqError {}

/** The broker refused the request itself (406 PRECONDITION_FAILED, 404 NOT_FOUND, WRONGTYPE): its code is the broker's. */
export class BrokerRequestError extends TsqTransportError {
  /** The operation failed, tsq did not (1), whatever the broker's code, unless tsq's table gives that code a status of its own. */
  override get exitCode(): number {
    const own = exitCodeOfCode(this.code)
    return own === undefined || own === ExitCode.SOFTWARE ? ExitCode.FAILURE : own
  }
}

/** The broker could not be reached or the connection dropped. */
export class BrokerConnectionError extends codedError('BROKER_UNREACHABLE', TsqTransportError) {}

/** A URL tsq cannot use: unknown scheme, malformed, bad port. */
export class BadBrokerUrlError extends codedError('BAD_URL', TsqTransportError) {}

/** The transport was closed; later calls say so instead of hanging. */
export class TransportClosedError extends TsqTransportError {
  constructor(message = 'transport is closed') {
    super('TRANSPORT_CLOSED', message)
  }
}

/**
 * A publish given a timeout that the broker did not confirm in time (a
 * RabbitMQ memory or disk alarm blocks publishing). `mayBeDelivered`: the
 * message left this process (it may sit in the socket or the broker's buffer
 * and still be routed once the alarm clears), so sending it again may run the
 * task twice; false: it was never written, and sending it again is safe.
 */
export class PublishTimeoutError extends TsqTransportError {
  readonly mayBeDelivered: boolean
  constructor(message: string, mayBeDelivered: boolean) {
    super(mayBeDelivered ? 'PUBLISH_UNCONFIRMED' : 'PUBLISH_NOT_SENT', message)
    this.mayBeDelivered = mayBeDelivered
  }
}

/** AMQP's reply codes by name, for the lines py-amqp prints. */
const REPLY_CODES: Record<string, number> = {
  NO_ROUTE: 312,
  ACCESS_REFUSED: 403,
  NOT_FOUND: 404,
  RESOURCE_LOCKED: 405,
  PRECONDITION_FAILED: 406,
  COMMAND_INVALID: 503,
  NOT_IMPLEMENTED: 540,
}

/** A broker refusal in py-amqp's words: `Queue.bind: (404) NOT_FOUND - no queue 'x' in vhost '/'`. */
export function refusal(method: string, code: string, text: string): BrokerRequestError {
  return new BrokerRequestError(code, `${method}: (${REPLY_CODES[code] ?? 500}) ${code} - ${text}`)
}
