import { exitCodeFor } from './exit-codes.js'

/**
 * How every tsq command ends on an error: one line on stderr (and a JSON
 * document on stdout under --json), the exit code by error class. Shared by
 * the oclif commands and the fast path.
 */
export function reportCliError(err: Error & { code?: string }, mode: { json: boolean; debug: boolean }): void {
  const exitCode = exitCodeFor(err)
  process.exitCode = exitCode
  const message = (err.message ?? String(err)).split('\n')[0]!.replace(/^Error: /, '')
  if (mode.json) process.stdout.write(`${JSON.stringify({ error: { code: err.code ?? err.name ?? 'ERROR', message, exitCode } })}\n`)
  if (mode.debug && err.stack) process.stderr.write(`${err.stack}\n`)
  process.stderr.write(`Error: ${message}\n`)
}
