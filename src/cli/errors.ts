export class CliError extends Error {
  readonly code: string
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
    this.name = new.target.name
  }
}

/** `No nodes replied within time constraint` (exit 69, as Celery). */
export class NoRepliesError extends CliError {
  constructor() {
    super('NO_REPLIES', 'No nodes replied within time constraint')
  }
}

export class UsageError extends CliError {
  constructor(message: string) {
    super('USAGE', message)
  }
}

/** A `--name SECONDS` flag's value: undefined when absent, else a positive number or one usage line. */
export function positiveSeconds(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined
  const n = Number(raw)
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${name} must be a positive number of seconds, got ${JSON.stringify(raw)}`)
  return n
}
