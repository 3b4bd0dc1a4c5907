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

/**
 * Installed where user code runs: the worker's main process (the solo pool,
 * and every module's top level) and each prefork or threads slot.
 */
export function surviveStrayErrors(report: (message: string) => void): StrayErrorHandlers {
  const onRejection = (reason: unknown): void => report(`Unhandled promise rejection in task code (the worker goes on): ${describe(reason)}`)
  const onException = (error: unknown): void => report(`Uncaught exception in task code (the worker goes on): ${describe(error)}`)
  process.on('unhandledRejection', onRejection)
  process.on('uncaughtException', onException)
  return {
    remove() {
      process.off('unhandledRejection', onRejection)
      process.off('uncaughtException', onException)
    },
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.stack ?? `${error.name}: ${error.message}`
  return String(error)
}
