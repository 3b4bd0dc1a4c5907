// How multi talks to the terminal, as Celery's TermLogger: `note` is quiet-able,
// `say` always prints, `info` only with --verbose, warnings go to stderr.
export interface MultiOutput {
  /** Progress lines (suppressed by --quiet); `newline: false` continues the line. */
  note(text: string, newline?: boolean): void
  /** Results that are the command's answer (names, show, get, expand). */
  say(text: string): void
  /** Only with --verbose (the spawned command lines). */
  info(text: string): void
  /** Stale pidfiles and refusals: stderr, even with --quiet. */
  warn(text: string): void
  paint: {
    ok(text: string): string
    failed(text: string): string
    down(text: string): string
    blue(text: string): string
  }
}

export interface TermOutputOptions {
  quiet: boolean
  verbose: boolean
  /** JSON mode: stdout carries only the document, progress goes nowhere. */
  json: boolean
  color: { green(s: string): string; red(s: string): string; magenta(s: string): string; blue(s: string): string }
  stdout?: NodeJS.WritableStream
  stderr?: NodeJS.WritableStream
}

export function termOutput(o: TermOutputOptions): MultiOutput {
  const stdout = o.stdout ?? process.stdout
  const stderr = o.stderr ?? process.stderr
  const progress = !o.quiet && !o.json
  return {
    note: (text, newline = true) => {
      if (progress) stdout.write(newline ? `${text}\n` : text)
    },
    say: (text) => {
      if (!o.json) stdout.write(`${text}\n`)
    },
    info: (text) => {
      if (o.verbose && !o.json) stdout.write(`${text}\n`)
    },
    warn: (text) => {
      stderr.write(`${text}\n`)
    },
    paint: { ok: o.color.green, failed: o.color.red, down: o.color.magenta, blue: o.color.blue },
  }
}
