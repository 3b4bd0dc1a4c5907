// What the remote-control flags mean, shared by the oclif commands and the
// fast path (no oclif here: the fast path loads this).
import { optionLabel, UsageError } from '../errors.js'
import { floatValue } from './flag-values.js'

export interface RemoteFlagValues {
  timeout: string
  destination?: string
  pattern?: string
  matcher?: string
  limit?: number
}

/** `-t/--timeout`: seconds above 0 (a string flag, so that its default prints as Celery's 1.0). */
export function parseTimeout(raw: string): number {
  return floatValue(optionLabel('timeout', 't'), raw, { min: 0, minOpen: true })
}

export function parseDestination(raw: string | undefined): string[] | null {
  if (!raw) return null
  const nodes = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  return nodes.length ? nodes : null
}

export function remoteOptions(flags: RemoteFlagValues) {
  if (!flags.pattern && flags.matcher) {
    // A matcher alone would be silently ignored by every node; say so instead.
    throw new UsageError('--matcher needs --pattern')
  }
  return {
    timeout: parseTimeout(flags.timeout),
    destination: parseDestination(flags.destination),
    pattern: flags.pattern ?? null,
    matcher: flags.pattern ? ((flags.matcher as 'glob' | 'pcre' | undefined) ?? 'glob') : null,
    limit: flags.limit ?? null,
  }
}
