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
