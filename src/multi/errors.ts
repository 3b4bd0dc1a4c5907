// Errors of `tsq multi`, with codes the CLI maps to exit statuses.
import { codedError, TsqError } from '../protocol/index.js'

export class MultiError extends TsqError {}

/** A bad node list, namespace or option value (exit 64). */
export class MultiUsageError extends codedError('USAGE', MultiError) {}

/** A pidfile or log directory that cannot be created (exit 73). */
export class MultiCantCreateError extends codedError('CANT_CREATE', MultiError) {}
