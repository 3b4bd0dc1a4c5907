// Celery's worker_redirect_stdouts: what task code prints goes through the
// worker's log, at worker_redirect_stdouts_level (WARNING by default), so it
// lands in the --logfile, stamped with its time and process, instead of on a
// terminal nobody reads. console.error stays an error: JavaScript code writes
// its errors there, where Python code would call logger.error.
import { format } from 'node:util'
import { LEVELS, parseLevel, type LevelName, type Logger } from '../process/index.js'

/** The level the app's conf asks prints to be logged at, or null when it turns the redirect off. */
export function redirectLevel(conf: Record<string, unknown>): LevelName | null {
  if (conf.worker_redirect_stdouts === false) return null
  const level = conf.worker_redirect_stdouts_level
  return typeof level === 'string' && level.toUpperCase() in LEVELS ? parseLevel(level) : 'WARNING'
}

export function redirectConsole(log: Logger, level: LevelName): void {
  const at =
    (lineLevel: LevelName) =>
    (...args: unknown[]): void => {
      if (log.enabled(lineLevel)) log.log(lineLevel, format(...args))
    }
  console.log = at(level)
  console.info = at(level)
  console.debug = at(level)
  console.warn = at(level)
  console.error = at('ERROR')
}
