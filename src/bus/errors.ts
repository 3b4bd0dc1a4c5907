// The bus's errors, each with a stable code the CLI maps to an exit status.
import { TsqError } from '../protocol/index.js'

export class BusError extends TsqError {}

/**
 * A queue of the service exists with other arguments than this side declares
 * (an operator changed AMQP_EVENTS_* on one side): RabbitMQ refuses the
 * declaration. One line, naming the queue and both argument sets.
 */
export class TopologyMismatchError extends BusError {
  constructor(
    readonly queue: string,
    readonly existing: Record<string, unknown> | null,
    readonly declared: Record<string, unknown>,
    brokerText: string,
  ) {
    const have = existing ? showArguments(existing) : `unknown (${brokerText})`
    super(
      'CONFIG',
      `queue '${queue}' exists with arguments ${have}, but this service declares ${showArguments(declared)}: give every worker and client of the service the same AMQP_EVENTS_* settings (or delete the queue)`,
    )
  }
}

export function showArguments(args: Record<string, unknown>): string {
  const keys = Object.keys(args).sort()
  return `{${keys.map((k) => `${k}: ${typeof args[k] === 'string' ? `'${String(args[k])}'` : String(args[k])}`).join(', ')}}`
}

/** `tsq archive show|replay` of an id the archive does not hold. */
export class ArchivedEventNotFoundError extends BusError {
  constructor(ids: readonly string[], service: string) {
    super('BAD_ARGUMENT', `no archived event ${ids.length === 1 ? ids[0] : `with the ids ${ids.join(', ')}`} in ${service}'s archive`)
  }
}
