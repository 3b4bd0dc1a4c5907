import { CommandLineError, InvalidValueError } from './errors.js'
import { didYouMean, escapeControl, escapeControlKeepLines, maskUrlsInText } from '../protocol/index.js'
import { exitCodeFor, isOclifUsageError } from './exit-codes.js'

/** What oclif's parse errors carry beside the parse: the arguments or flags they are about, for some. */
interface OclifParseError extends Error {
  args?: unknown
  flags?: unknown
}

/**
 * The one line for an error of oclif's parser, told by what it carries (oclif
 * does not export these classes): a missing argument carries the definitions
 * of those it misses, and it is named (an extra argument carries the words); a
 * flag's failed validation or constraint carries nothing of its own and lists
 * its reasons under a first line that only announces them; anything else
 * says it in its first line.
 */
function oclifLine(err: OclifParseError): string {
  const { args, flags } = err
  if (Array.isArray(args) && args.length > 0 && args.every((arg) => typeof arg === 'object' && arg !== null)) {
    const names = (args as Array<{ name?: string }>).map((arg) => arg.name).filter(Boolean)
    if (names.length) return `Missing required argument${names.length === 1 ? '' : 's'}: ${names.join(', ')}`
  }
  // An unknown flag carries the words given and the parse's own flags: each with the names near it.
  const defined = (err as { parse?: { input?: { flags?: Record<string, unknown> } } }).parse?.input?.flags
  if (Array.isArray(flags) && defined) {
    const names = Object.keys(defined).map((name) => `--${name}`)
    const each = flags.map(
      (flag) => `${String(flag)}${String(flag).startsWith('--') ? didYouMean(String(flag).split('=')[0]!, names) : ''}`,
    )
    return `Nonexistent flag${flags.length === 1 ? '' : 's'}: ${each.join(', ')}`
  }
  const [first = '', ...rest] = (err.message ?? '').split('\n')
  if (args === undefined && flags === undefined) {
    // oclif dims the reasons on a terminal.
    // eslint-disable-next-line no-control-regex -- matches the terminal escape (ESC) it strips
    const colour = /\x1b\[[0-9;]*m/g
    const reasons = rest.map((line) => line.replace(colour, '').trim()).filter((line) => line && !line.startsWith('See more help'))
    if (reasons.length) return reasons.join('; ')
  }
  return first
}

/** An error of oclif's parser as a CommandLineError (tsq's code, its one line); any other error as it is. */
export function commandLineErrorOf(err: Error): Error {
  return isOclifUsageError(err) ? new CommandLineError(oclifLine(err), { cause: err }) : err
}

/**
 * How every tsq command ends on an error: one line on stderr (and a JSON
 * document on stdout under --json), the exit code by the error's code. Shared
 * by the oclif commands (their parse errors through commandLineErrorOf first)
 * and the fast path.
 */
export function reportCliError(err: Error & { code?: string }, mode: { json: boolean; debug: boolean; command?: string }): void {
  const exitCode = exitCodeFor(err)
  process.exitCode = exitCode
  // A flag's bad value keeps click's sentence, whatever oclif did to the message.
  const text = err instanceof InvalidValueError ? err.line : (err.message ?? String(err))
  // A URL a driver or the user's code put in the message is shown with its password masked.
  let message = escapeControl(maskUrlsInText(text.split('\n')[0]!.replace(/^Error: /, '')))
  // click's "Try 'celery worker --help' for help.", on the same line: one line per error.
  if (mode.command && err instanceof CommandLineError) message += ` (try 'tsq ${mode.command} --help')`
  // Where in the user's source it went wrong (a task module that does not load), when the error knows.
  const { location, detail } = err as { location?: unknown; detail?: unknown }
  if (mode.json) {
    const error = { code: err.code ?? err.name ?? 'ERROR', message, exitCode, ...(location ? { location } : {}) }
    process.stdout.write(`${JSON.stringify({ error })}\n`)
  }
  // oclif's own stack, where the line came from it.
  const stack = err instanceof CommandLineError && err.cause instanceof Error ? err.cause.stack : err.stack
  if (mode.debug && stack) process.stderr.write(`${escapeControlKeepLines(maskUrlsInText(stack))}\n`)
  process.stderr.write(`Error: ${message}\n`)
  if (typeof detail === 'string' && detail) process.stderr.write(`${escapeControlKeepLines(detail)}\n`)
}
