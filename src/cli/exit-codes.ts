// The exit status of whatever ended a command: a TsqError says its own (by its
// code, protocol/errors.ts); any other error with one of tsq's codes maps the
// same way; oclif's errors carry theirs (2, flag syntax, is Celery's 64); the
// rest is a bug (70). Never by message text, nor by class name.
import { ExitCode, exitCodeOfCode, isTsqError } from '../protocol/index.js'

export { ExitCode } from '../protocol/index.js'
export type { ExitCodeValue } from '../protocol/index.js'

/**
 * An error of oclif's parser (its CLIParseError, the base of every one: a
 * missing argument, an unknown flag, a bad value): the command line itself was
 * wrong. Told by its shape, the parse it failed and oclif's exit, so the fast
 * path need not load oclif to ask.
 */
export function isOclifUsageError(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false
  const { parse, oclif } = error as { parse?: unknown; oclif?: unknown }
  return typeof parse === 'object' && parse !== null && typeof oclif === 'object' && oclif !== null
}

export function exitCodeFor(error: unknown): number {
  if (isTsqError(error)) return error.exitCode
  if (error && typeof error === 'object') {
    const code = (error as { code?: unknown }).code
    const byCode = typeof code === 'string' ? exitCodeOfCode(code) : undefined
    if (byCode !== undefined) return byCode
    if (isOclifUsageError(error)) return ExitCode.USAGE
    const oclif = (error as { oclif?: { exit?: unknown } }).oclif
    if (oclif && typeof oclif.exit === 'number') return oclif.exit === 2 ? ExitCode.USAGE : oclif.exit
  }
  return ExitCode.SOFTWARE
}
