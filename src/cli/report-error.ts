import { InvalidValueError } from './errors.js'
import { didYouMean, escapeControl, escapeControlKeepLines, maskUrlsInText } from '../protocol/index.js'
import { exitCodeFor, isOclifUsageError } from './exit-codes.js'

/**
 * oclif's usage errors whose first line only announces what follows ("The
 * following error occurred:", "Missing 1 required arg:"), as the one line:
 * which argument is missing, or the reasons oclif lists (by error class).
 */
function oclifDetail(err: Error): string | undefined {
  const kind = (err as { constructor?: { name?: string } }).constructor?.name
  if (kind === 'RequiredArgsError') {
    const names = ((err as { args?: Array<{ name?: string }> }).args ?? []).map((arg) => arg.name).filter(Boolean)
    if (names.length) return `Missing required argument${names.length === 1 ? '' : 's'}: ${names.join(', ')}`
  }
  if (kind === 'NonExistentFlagsError') {
    const given = (err as { flags?: unknown }).flags
    const defined = (err as { parse?: { input?: { flags?: Record<string, unknown> } } }).parse?.input?.flags
    if (Array.isArray(given) && defined) {
      const names = Object.keys(defined).map((name) => `--${name}`)
      const each = given.map(
        (flag) => `${String(flag)}${String(flag).startsWith('--') ? didYouMean(String(flag).split('=')[0]!, names) : ''}`,
      )
      return `Nonexistent flag${given.length === 1 ? '' : 's'}: ${each.join(', ')}`
    }
  }
  if (kind === 'FailedFlagValidationError' || kind === 'ViolatedFlagConstraintError') {
    // oclif dims the reasons on a terminal.
    // eslint-disable-next-line no-control-regex -- matches the terminal escape (ESC) it strips
    const colour = /\x1b\[[0-9;]*m/g
    const reasons = (err.message ?? '')
      .split('\n')
      .slice(1)
      .map((line) => line.replace(colour, '').trim())
      .filter((line) => line && !line.startsWith('See more help'))
    if (reasons.length) return reasons.join('; ')
  }
  return undefined
}

/**
 * How every tsq command ends on an error: one line on stderr (and a JSON
 * document on stdout under --json), the exit code by error class. Shared by
 * the oclif commands and the fast path.
 */
export function reportCliError(err: Error & { code?: string }, mode: { json: boolean; debug: boolean; command?: string }): void {
  const exitCode = exitCodeFor(err)
  process.exitCode = exitCode
  // A flag's bad value keeps click's sentence, whatever oclif did to the message.
  const text = err instanceof InvalidValueError ? err.line : (oclifDetail(err) ?? err.message ?? String(err))
  // A URL a driver or the user's code put in the message is shown with its password masked.
  let message = escapeControl(maskUrlsInText(text.split('\n')[0]!.replace(/^Error: /, '')))
  // click's "Try 'celery worker --help' for help.", on the same line: one line per error.
  if (mode.command && isOclifUsageError(err)) message += ` (try 'tsq ${mode.command} --help')`
  // Where in the user's source it went wrong (a task module that does not load), when the error knows.
  const { location, detail } = err as { location?: unknown; detail?: unknown }
  if (mode.json) {
    const error = { code: err.code ?? err.name ?? 'ERROR', message, exitCode, ...(location ? { location } : {}) }
    process.stdout.write(`${JSON.stringify({ error })}\n`)
  }
  if (mode.debug && err.stack) process.stderr.write(`${escapeControlKeepLines(maskUrlsInText(err.stack))}\n`)
  process.stderr.write(`Error: ${message}\n`)
  if (typeof detail === 'string' && detail) process.stderr.write(`${escapeControlKeepLines(detail)}\n`)
}
