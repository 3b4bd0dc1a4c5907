// The root of tsq's errors, and the protocol's own. Every error tsq raises on
// purpose is a TsqError with a stable `code` (what went wrong, for a script
// reading `--json` and for the exit status), and the exit status a command
// ends with follows from that code (sysexits, as Celery's).

/** Celery's exit statuses (celery/platforms.py, BSD sysexits), and 70 for a bug. */
export const ExitCode = {
  OK: 0,
  FAILURE: 1,
  USAGE: 64,
  UNAVAILABLE: 69,
  SOFTWARE: 70,
  CANTCREAT: 73,
  TEMPFAIL: 75,
} as const

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode]

/**
 * The codes of errors that end no command, or end one only through a bug of
 * tsq (70, as an error with no code): what a task raises for the worker
 * (Celery's Retry, Ignore, Reject, its soft time limit), what the app raises
 * to a task module's code (locks, once, batch sends), the worker's and the
 * dashboard's own (a suppressed reply, an HTTP answer), and failures a command
 * meets only when something else went wrong first (a message or stored value
 * tsq refuses to read or write, a closed transport, a file name or store
 * refused).
 */
const SOFTWARE_CODES = [
  'RETRY',
  'IGNORE',
  'REPLACE',
  'REJECT',
  'SOFT_TIME_LIMIT',
  'LOCKED',
  'LOCK_LOST',
  'LOCK_STORE_UNAVAILABLE',
  'ALREADY_QUEUED',
  'SENDS_UNCONFIRMED',
  'REPLY_SUPPRESSED',
  'HTTP_STATUS',
  'QUERY_SYNTAX',
  'ENCODE',
  'FIELD_TABLE',
  'MALFORMED_ENVELOPE',
  'UNSUPPORTED_CONTENT_TYPE',
  'CONTENT_DISALLOWED',
  'PICKLE_REFUSED',
  'UNKNOWN_SERIALIZER',
  'MESSAGE_LIMIT',
  'SECURITY',
  'TRANSPORT_CLOSED',
  'NAME_TOO_LONG',
  'UNSAFE_STORE',
] as const

/** Each error code and the exit status it ends a command with; a code not here is a bug's (70). */
const EXIT_BY_CODE: Readonly<Record<string, ExitCodeValue>> = {
  ...Object.fromEntries(SOFTWARE_CODES.map((code) => [code, ExitCode.SOFTWARE])),
  BROKER_UNREACHABLE: ExitCode.UNAVAILABLE,
  NO_REPLIES: ExitCode.UNAVAILABLE,
  BAD_URL: ExitCode.USAGE,
  BAD_ARGUMENT: ExitCode.USAGE,
  UNKNOWN_METHOD: ExitCode.USAGE,
  // A %-template of a node name or file name (-n, --logfile, --pidfile) with a key Celery does not have.
  NODE_TEMPLATE: ExitCode.USAGE,
  USAGE: ExitCode.USAGE,
  CONFIG: ExitCode.USAGE,
  MALFORMED_MESSAGE: ExitCode.USAGE,
  // A stored result tsq will not unpickle (codecs/plain-pickle.ts): the data, not the command, is at fault.
  UNSAFE_PICKLE: ExitCode.FAILURE,
  RESULT_TIMEOUT: ExitCode.UNAVAILABLE,
  // A send past its --timeout / task_publish_timeout: 69 when the message may still be delivered (do not send it again blindly), 75 when it was not sent (safe to retry).
  PUBLISH_UNCONFIRMED: ExitCode.UNAVAILABLE,
  PUBLISH_NOT_SENT: ExitCode.TEMPFAIL,
  TASK_FAILED: ExitCode.FAILURE,
  // A failed task that cannot be sent again exactly (no kept message, no exact arguments), or an id not in the inbox.
  RESEND_REFUSED: ExitCode.FAILURE,
  NOT_FAILED: ExitCode.FAILURE,
  // A `tsq shell` script that threw.
  SCRIPT_FAILED: ExitCode.FAILURE,
  CANT_CREATE: ExitCode.CANTCREAT,
  // --uid/--gid as a user that may not change them: Celery's SecurityError ends with 1 too.
  PERMISSION: ExitCode.FAILURE,
  // An optional package the project has not installed (a SQL driver): sysexits' "a support program does not exist".
  MISSING_PACKAGE: ExitCode.UNAVAILABLE,
}

/** Every error code with an exit status of its own, and that status (docs/errors.md's table lists them). */
export function exitCodesByErrorCode(): ReadonlyArray<readonly [string, ExitCodeValue]> {
  return Object.entries(EXIT_BY_CODE)
}

/** The exit status of an error code, or undefined for a code with none of its own. */
export function exitCodeOfCode(code: string): ExitCodeValue | undefined {
  return Object.hasOwn(EXIT_BY_CODE, code) ? EXIT_BY_CODE[code] : undefined
}

// A registry symbol, not instanceof: a task module's copy of tsq ('tsq') is not
// the CLI's bundled one, so each has its own classes.
const TSQ_ERROR = Symbol.for('tsq.error')

export class TsqError extends Error {
  /** What went wrong, stable: a script reads it (`--json`), and the exit status follows from it. */
  readonly code: string
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
    this.name = new.target.name
  }

  /** The exit status a tsq command ends with when this error ends it. */
  get exitCode(): number {
    return exitCodeOfCode(this.code) ?? ExitCode.SOFTWARE
  }
}
Object.defineProperty(TsqError.prototype, TSQ_ERROR, { value: true })

/**
 * The base of an error class whose errors all have `code` and take a message:
 * `class QueueSettingError extends codedError('CONFIG') {}` (named as the
 * subclass, as every TsqError). `base`: a layer's own base instead of TsqError.
 */
export function codedError(
  code: string,
  base: typeof TsqError = TsqError,
): new (message: string, options?: { cause?: unknown }) => TsqError {
  return class extends base {
    constructor(message: string, options?: { cause?: unknown }) {
      super(code, message, options)
    }
  }
}

/** A TsqError, whichever copy of tsq made it. */
export function isTsqError(value: unknown): value is TsqError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[TSQ_ERROR] === true
}

// Protocol errors: a message tsq cannot read is the sender's fault, so the
// worker rejects it without requeue; the code says which rule it broke.
export class ProtocolError extends TsqError {}

/** A message that cannot be decoded: bad JSON, missing id/task, wrong types, bad dates. */
export class MalformedMessageError extends codedError('MALFORMED_MESSAGE', ProtocolError) {}

/**
 * A content type tsq does not accept (not in accept_content, which is JSON
 * alone by default, as in Celery). A subclass so callers that reject malformed
 * messages treat it the same way.
 */
export class UnsupportedContentTypeError extends MalformedMessageError {
  override readonly code: string = 'UNSUPPORTED_CONTENT_TYPE'
  readonly contentType: string
  constructor(contentType: string) {
    super(`content type ${JSON.stringify(contentType)} is not accepted (only application/json)`)
    this.contentType = contentType
  }
}

/** An unknown %x key in a node-name or file template (Celery raises ValueError). */
export class NodeTemplateError extends codedError('NODE_TEMPLATE', ProtocolError) {}

/**
 * A value kombu's JSON cannot carry (a function, a circular structure, bytes):
 * kombu.exceptions.EncodeError. `reason` is the cause as Python shows it,
 * `TypeError('Object of type function is not JSON serializable')`, which is
 * what Celery stores as the EncodeError's argument.
 */
export class EncodeError extends ProtocolError {
  readonly reason: string
  constructor(cause: unknown) {
    const message = cause instanceof Error ? cause.message : String(cause)
    super('ENCODE', message, { cause })
    this.reason = pythonReason(cause, message)
  }
}

/** Python's OverflowError, which kombu's EncodeError wraps: `EncodeError(OverflowError('Integer value out of range'))`. */
export class OverflowError extends codedError('ENCODE', ProtocolError) {}

function pythonReason(cause: unknown, message: string): string {
  if (cause instanceof RangeError) return "RecursionError('maximum recursion depth exceeded while encoding a JSON object')"
  const type = cause instanceof OverflowError ? 'OverflowError' : message === 'Circular reference detected' ? 'ValueError' : 'TypeError'
  return `${type}(${JSON.stringify(message).replace(/^"|"$/g, "'")})`
}
