// Errors of `tsq multi`, with codes the CLI maps to exit statuses.
import { TsqError } from '../protocol/index.js'

export class MultiError extends TsqError {}

/** A bad node list, namespace or option value (exit 64). */
export class MultiUsageError extends MultiError {
  constructor(message: string) {
    super('USAGE', message)
  }
}

/** A pidfile or log directory that cannot be created (exit 73). */
export class MultiCantCreateError extends MultiError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CANT_CREATE', message, options)
  }
}
