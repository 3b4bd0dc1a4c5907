// Celery's exit codes (celery/platforms.py), plus oclif's 2 for flag syntax and
// 70 for bugs. Mapped by error class and code, never by message text.
export const ExitCode = {
  OK: 0,
  FAILURE: 1,
  USAGE: 64,
  UNAVAILABLE: 69,
  TEMPFAIL: 75,
  SOFTWARE: 70,
  CANTCREAT: 73,
} as const

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode]

const BY_CODE: Record<string, ExitCodeValue> = {
  BROKER_UNREACHABLE: ExitCode.UNAVAILABLE,
  NO_REPLIES: ExitCode.UNAVAILABLE,
  BAD_URL: ExitCode.USAGE,
  BAD_ARGUMENT: ExitCode.USAGE,
  UNKNOWN_METHOD: ExitCode.USAGE,
  USAGE: ExitCode.USAGE,
  CONFIG: ExitCode.USAGE,
  MALFORMED_MESSAGE: ExitCode.USAGE,
  // A stored result tsq will not unpickle (protocol/plain-pickle.ts): the data, not the command, is at fault.
  UNSAFE_PICKLE: ExitCode.FAILURE,
  RESULT_TIMEOUT: ExitCode.UNAVAILABLE,
  // A send past its --timeout / task_publish_timeout: 69 when the message may still be delivered (do not send it again blindly), 75 when it was not sent (safe to retry).
  PUBLISH_UNCONFIRMED: ExitCode.UNAVAILABLE,
  PUBLISH_NOT_SENT: ExitCode.TEMPFAIL,
  TASK_FAILED: ExitCode.FAILURE,
  // A `tsq shell` script that threw.
  SCRIPT_FAILED: ExitCode.FAILURE,
  CANT_CREATE: ExitCode.CANTCREAT,
  // --uid/--gid as a user that may not change them: Celery's SecurityError ends with 1 too.
  PERMISSION: ExitCode.FAILURE,
}

/** oclif's own parse errors, by class name (they carry no code of ours). */
const OCLIF_USAGE_ERRORS = new Set([
  'RequiredArgsError',
  'RequiredFlagError',
  'UnexpectedArgsError',
  'NonExistentFlagsError',
  'FailedFlagValidationError',
  'ArgInvalidOptionError',
  'FlagInvalidOptionError',
  'CLIParseError',
])

/** An error of oclif's parser: the command line itself was wrong. */
export function isOclifUsageError(error: unknown): boolean {
  return !!error && typeof error === 'object' && OCLIF_USAGE_ERRORS.has((error as { constructor?: { name?: string } }).constructor?.name ?? '')
}

export function exitCodeFor(error: unknown): number {
  if (error && typeof error === 'object') {
    const code = (error as { code?: unknown }).code
    if (typeof code === 'string' && code in BY_CODE) return BY_CODE[code]!
    const name = (error as { constructor?: { name?: string } }).constructor?.name ?? ''
    if (OCLIF_USAGE_ERRORS.has(name)) return ExitCode.USAGE
    // The broker refused the request (404 no such queue, 406 not empty, WRONGTYPE): the operation failed, tsq did not.
    if (name === 'BrokerRequestError') return ExitCode.FAILURE
    const oclif = (error as { oclif?: { exit?: unknown } }).oclif
    if (oclif && typeof oclif.exit === 'number') return oclif.exit === 2 ? ExitCode.USAGE : oclif.exit
  }
  return ExitCode.SOFTWARE
}
