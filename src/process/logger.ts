// Celery's log line: `[2026-11-22 12:00:00,123: INFO/MainProcess] message`.
import { appendFileSync } from 'node:fs'
import { escapeControlKeepLines, maskUrlsInText, TsqError } from '../protocol/index.js'

export const LEVELS = { DEBUG: 10, INFO: 20, WARNING: 30, ERROR: 40, CRITICAL: 50 } as const
export type LevelName = keyof typeof LEVELS

export function parseLevel(raw: string): LevelName {
  const upper = raw.toUpperCase() === 'WARN' ? 'WARNING' : raw.toUpperCase() === 'FATAL' ? 'CRITICAL' : raw.toUpperCase()
  if (!(upper in LEVELS)) throw new TsqError('USAGE', `invalid log level ${JSON.stringify(raw)} (DEBUG, INFO, WARNING, ERROR, CRITICAL)`)
  return upper as LevelName
}

function stamp(d = new Date()): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0')
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())},${p(d.getMilliseconds(), 3)}`
}

/**
 * What every line goes through: a URL's password masked, and control characters
 * (ESC, CR, ...) escaped so no value can forge a line or drive the terminal;
 * newlines stay (tracebacks), so values from messages are escaped where logged.
 */
export function safeLine(message: string): string {
  return escapeControlKeepLines(maskUrlsInText(message))
}

export class Logger {
  private readonly threshold: number

  constructor(
    level: LevelName = 'WARNING',
    private readonly file: string | null = null,
    private readonly processName = 'MainProcess',
  ) {
    this.threshold = LEVELS[level]
  }

  /** For lines on the hot path: skip building the message when it would be dropped. */
  enabled(level: LevelName): boolean {
    return LEVELS[level] >= this.threshold
  }

  log(level: LevelName, message: string): void {
    if (LEVELS[level] < this.threshold) return
    const line = `[${stamp()}: ${level}/${this.processName}] ${safeLine(message)}\n`
    if (this.file) appendFileSync(this.file, line)
    else process.stderr.write(line)
  }

  debug(m: string): void {
    this.log('DEBUG', m)
  }
  info(m: string): void {
    this.log('INFO', m)
  }
  warning(m: string): void {
    this.log('WARNING', m)
  }
  error(m: string): void {
    this.log('ERROR', m)
  }
  critical(m: string): void {
    this.log('CRITICAL', m)
  }

  /** Lines an operator must see on the console even at -l WARNING (shutdown prompts). */
  console(message: string): void {
    message = safeLine(message)
    process.stderr.write(`${message}\n`)
    if (this.file) appendFileSync(this.file, `${message}\n`)
  }
}
