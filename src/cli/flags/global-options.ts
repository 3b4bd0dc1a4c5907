// Celery's global options go before the command name: `celery -A proj worker`,
// `celery -b URL inspect ping`. tsq takes them there and after the name, as its
// own flags. bin/run.js moves the leading ones behind the command's name before
// anything parses the line, so oclif and the fast path see one form only.
// Plain functions: bin/run.js reaches this through the fast path's bundle, which
// must not load oclif.
import { UsageError } from '../errors.js'

/** Each option that may come before the command, and whether it takes a value. */
const LEADING_OPTIONS: Readonly<Record<string, boolean>> = {
  // Celery's (celery/bin/celery.py); --loader has no meaning in tsq and is not taken.
  '-A': true,
  '--app': true,
  '-b': true,
  '--broker': true,
  '--result-backend': true,
  '--config': true,
  '--workdir': true,
  '-C': false,
  '--no-color': false,
  '-q': false,
  '--quiet': false,
  // tsq's own global flags.
  '-j': false,
  '--json': false,
  '--debug': false,
}

/** Command names that take a second word (`tsq schedule add`): oclif's topics. */
export const TOPICS: readonly string[] = ['schedule', 'bus', 'archive', 'failed', 'logtool', 'locks', 'dedup', 'list', 'graph']

/** What bin/run.js leaves to oclif when it comes first: the help and the version. */
const ROOT_WORDS = new Set(['--help', '-h', '--version', '-v'])

/** The line's global options before the command, each as its own words; throws a usage error for a word it cannot take. */
function leadingWords(arg: string, next: string | undefined): { words: string[]; used: number } | undefined {
  if (arg.startsWith('--')) {
    const eq = arg.indexOf('=')
    const name = eq === -1 ? arg : arg.slice(0, eq)
    const takesValue = LEADING_OPTIONS[name]
    if (takesValue === undefined) return undefined
    if (eq !== -1 && !takesValue) throw new UsageError(`Option '${name}' does not take a value.`)
    if (!takesValue || eq !== -1) return { words: [arg], used: 1 }
    if (next === undefined) throw new UsageError(`Option '${name}' requires an argument.`)
    return { words: [arg, next], used: 2 }
  }
  const takesValue = LEADING_OPTIONS[arg.slice(0, 2)]
  if (takesValue === undefined) return undefined
  if (takesValue) {
    if (arg.length > 2) return { words: [arg], used: 1 }
    if (next === undefined) throw new UsageError(`Option '${arg}' requires an argument.`)
    return { words: [arg, next], used: 2 }
  }
  // -qC: flags that take no value, together, as click reads them.
  const letters = [...arg.slice(1)].map((c) => `-${c}`)
  if (letters.some((flag) => LEADING_OPTIONS[flag] !== false)) return undefined
  return { words: letters, used: 1 }
}

/**
 * The command line with the global options that came before the command moved
 * right after its name (`-A x worker -l INFO` → `worker -A x -l INFO`), the
 * form oclif parses. `multi` takes them at the end, before any `--`, as
 * Celery's multi rearranges its line, so that they reach every node. A line
 * that starts with the command, `--help` or `--version` is returned as it is;
 * one whose leading options cannot be read is a usage error in click's words
 * (`No such option: --bogus`, `Option '-A' requires an argument.`, `Missing
 * command.`), as `celery` prints for the same line.
 */
export function hoistGlobalOptions(argv: readonly string[]): string[] {
  const globals: string[] = []
  let i = 0
  while (i < argv.length && !ROOT_WORDS.has(argv[i]!) && argv[i]!.startsWith('-') && argv[i] !== '-') {
    const leading = leadingWords(argv[i]!, argv[i + 1])
    if (!leading) throw new UsageError(`No such option: ${argv[i]}`)
    globals.push(...leading.words)
    i += leading.used
  }
  if (i === 0) return [...argv]
  const rest = argv.slice(i)
  const command = rest[0]
  if (command === undefined) throw new UsageError('Missing command.')
  // `tsq -A x --help`: the help of tsq itself, as `celery -A x --help` prints celery's.
  if (ROOT_WORDS.has(command)) return [command]
  const idWords = TOPICS.includes(command) && rest[1] !== undefined && !rest[1].startsWith('-') ? 2 : 1
  const id = rest.slice(0, idWords)
  const after = rest.slice(idWords)
  if (command === 'multi') {
    const dashdash = after.indexOf('--')
    const head = dashdash === -1 ? after : after.slice(0, dashdash)
    const tail = dashdash === -1 ? [] : after.slice(dashdash)
    return [...id, ...head, ...globals, ...tail]
  }
  return [...id, ...globals, ...after]
}
