// Task code can leave a promise rejected with nobody listening, or throw from
// a timer or an event handler it set up. Node ends the process for either, and
// a worker's process holds every task it has fetched: one stray error took the
// whole worker down (solo), or a pool process with the next task in it. Python's
// Celery prints an exception raised in a stray thread and goes on; so does
// tsq: the error is logged with its stack and the worker carries on.

export interface StrayErrorHandlers {
  /** Takes the handlers away again (tests). */
  remove(): void
}

/** What each stray error becomes: a report, or, for a broken pipe under the log itself, nothing. */
export function strayErrorListeners(report: (message: string) => void) {
  const onRejection = (reason: unknown): void =>
    report(`Unhandled promise rejection in task code (the worker goes on): ${describe(reason)}`)
  const onException = (error: unknown): void => {
    // The log's own pipe is gone (`tsq worker | head`): reporting it would write to it again, for ever.
    if (isBrokenPipe(error)) return
    report(`Uncaught exception in task code (the worker goes on): ${describe(error)}`)
  }
  return { onRejection, onException }
}

/**
 * Installed where user code runs: the worker's main process (the solo pool,
 * and every module's top level) and each prefork or threads slot.
 */
export function surviveStrayErrors(report: (message: string) => void): StrayErrorHandlers {
  const { onRejection, onException } = strayErrorListeners(report)
  process.on('unhandledRejection', onRejection)
  process.on('uncaughtException', onException)
  // A closed stdout or stderr has nowhere to be reported; Python's worker ignores SIGPIPE alike.
  process.stdout.on('error', onException)
  process.stderr.on('error', onException)
  return {
    remove() {
      process.off('unhandledRejection', onRejection)
      process.off('uncaughtException', onException)
      process.stdout.off('error', onException)
      process.stderr.off('error', onException)
    },
  }
}

function isBrokenPipe(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === 'EPIPE' || code === 'ERR_STREAM_DESTROYED'
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.stack ?? `${error.name}: ${error.message}`
  return String(error)
}
