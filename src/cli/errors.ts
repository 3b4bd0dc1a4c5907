import { codedError, TsqError } from '../protocol/index.js'

/** What the commands raise themselves; the exit status follows from the code (protocol/errors.ts). */
export class CliError extends TsqError {}

/**
 * `No nodes replied within time constraint` (exit 69, as Celery), with the
 * broker that was asked: a worker on another broker (or none, on the embedded
 * default a fresh shell falls back to) is the usual reason.
 */
export class NoRepliesError extends CliError {
  constructor(asked?: { url: string; embeddedDefault: boolean }) {
    const where = asked
      ? ` (asked ${asked.url}${asked.embeddedDefault ? ', the embedded default: no -b, -A, --config or broker URL variable named one' : ''})`
      : ''
    super('NO_REPLIES', `No nodes replied within time constraint${where}`)
  }
}

export class UsageError extends codedError('USAGE', CliError) {}

/**
 * oclif's refusal of the command line itself (an unknown flag, a missing
 * argument, a flag's failed validation), as the one line tsq prints (exit 64;
 * the report adds where the command's help is). report-error.ts makes it.
 */
export class CommandLineError extends UsageError {}

/** How click names an option in its messages: `'-c' / '--concurrency'`, or `'--time-limit'`. */
export function optionLabel(name: string, char?: string): string {
  return char ? `'-${char}' / '--${name}'` : `'--${name}'`
}

/**
 * A flag's value that is not what the flag takes, in click's words, as Celery
 * prints it: `Invalid value for '-c' / '--concurrency': 'abc' is not a valid
 * integer.` (exit 64). oclif rewrites the message of an error thrown while it
 * parses a flag ("Parsing --concurrency ..."); `line` keeps the sentence, and
 * report-error.ts prints that.
 */
export class InvalidValueError extends CliError {
  readonly line: string
  constructor(label: string, problem: string) {
    const line = `Invalid value for ${label}: ${problem}`
    super('USAGE', line)
    this.line = line
  }
}
