import { Args, Flags } from '@oclif/core'
import { visibleCommands, type ControlKind } from '../../protocol/index.js'
import { optionLabel } from '../errors.js'
import { choiceValue, floatValue, integerValue, type NumberRange } from './flag-values.js'

// oclif's flag types with click's sentence for a bad value (flag-values.ts):
// `Invalid value for '-c' / '--concurrency': 'abc' is not a valid integer.`,
// where oclif's own integer and options say "Parsing --concurrency" or
// "Expected --pool=x to be one of: ...".
//
// Each says how the CLI's fast path reads its value (`fastValue`): the build
// reads the fast commands' flags from their classes (src/cli/fast-specs.ts),
// and a flag without one keeps its command on oclif's path.

/** How the fast path reads a flag's value as this flag's parse does; none: it cannot. */
export type FastValue = 'string' | 'integer' | 'float' | 'choice'

/** `factory`, whose flags say `fastValue` (oclif keeps unknown properties on a flag, and leaves them out of its manifest and help). */
function readableAs<F extends (...args: never[]) => object>(factory: F, fastValue: FastValue): F {
  return ((...args: Parameters<F>) => ({ ...factory(...args), fastValue })) as F
}

const labelOf = (flag: { name: string; char?: string }) => optionLabel(flag.name, flag.char)

/** Flags.string, that the fast path reads as given. */
export const stringFlag = readableAs(Flags.custom<string>(), 'string')

/** Flags.integer, with click's messages. */
export const integerFlag = readableAs(
  Flags.custom<number, NumberRange>({
    parse: async (input, _context, flag) => integerValue(labelOf(flag), input, flag),
  }),
  'integer',
)

/** A number (seconds, mostly), as click.FLOAT and click.FloatRange read it. */
export const floatFlag = readableAs(
  Flags.custom<number, NumberRange>({
    parse: async (input, _context, flag) => floatValue(labelOf(flag), input, flag),
  }),
  'float',
)

const choiceDefinition = readableAs(
  Flags.custom<string, { choices: readonly string[] }>({
    parse: async (input, _context, flag) => choiceValue(labelOf(flag), input, flag.choices),
  }),
  'choice',
)

/**
 * Flags.string's `options`, as `choices`, with click's message for a value
 * that is not one of them (oclif checks `options` before any parse, in its own
 * words); help shows them as the flag's value.
 */
export const choiceFlag = ((options: { choices: readonly string[]; helpValue?: string }) =>
  choiceDefinition({ helpValue: options.choices.join('|'), ...options } as Parameters<
    typeof choiceDefinition
  >[0])) as unknown as typeof choiceDefinition

const GLOBAL = 'GLOBAL'

/**
 * Every command's flags: Celery's global options (which may also come before
 * the command name, see global-options.ts) and tsq's --json and --debug.
 */
export const globalFlags = {
  app: stringFlag({
    char: 'A',
    description:
      'The task module (exports the app as `app` or default): the broker, the result backend and the settings (routes, default queue) come from it unless a flag or the environment names them.',
    helpGroup: GLOBAL,
  }),
  broker: stringFlag({
    char: 'b',
    description: "Broker URL (default: $TSQ_BROKER_URL, $CELERY_BROKER_URL, the app's, else the embedded file:// broker).",
    helpGroup: GLOBAL,
  }),
  'result-backend': stringFlag({
    description: "Result backend URL (default: $TSQ_RESULT_BACKEND, $CELERY_RESULT_BACKEND, the app's).",
    helpGroup: GLOBAL,
  }),
  config: stringFlag({
    description:
      "A module of Celery settings by their Python names (broker_url, result_backend, task_routes, task_default_queue, ...), below the app's own (also $TSQ_CONFIG_MODULE).",
    helpGroup: GLOBAL,
  }),
  workdir: stringFlag({ description: 'Change to this directory first (-A and --config are found from there).', helpGroup: GLOBAL }),
  'no-color': Flags.boolean({ char: 'C', description: 'Plain output (also NO_COLOR, or when not a terminal).', helpGroup: GLOBAL }),
  quiet: Flags.boolean({ char: 'q', description: 'Print less.', helpGroup: GLOBAL }),
  json: Flags.boolean({ char: 'j', description: 'Print one JSON document (for scripts).', helpGroup: GLOBAL }),
  debug: Flags.boolean({ description: 'Show stack traces on errors.', helpGroup: GLOBAL }),
}

const REMOTE = 'REMOTE CONTROL'

/** inspect, control and status: who is asked, and how long replies are waited for. */
export const remoteFlags = {
  // A string, so that its default prints as Celery's 1.0 (remote-flags.ts reads it).
  timeout: stringFlag({ char: 't', description: 'Seconds to wait for each next reply.', default: '1.0', helpGroup: REMOTE }),
  destination: stringFlag({ char: 'd', description: 'Comma-separated list of destination node names.', helpGroup: REMOTE }),
  pattern: stringFlag({ description: 'Only nodes whose name matches (with --matcher).', helpGroup: REMOTE }),
  matcher: choiceFlag({ description: 'How --pattern matches node names.', choices: ['glob', 'pcre'], helpGroup: REMOTE }),
  limit: integerFlag({ description: 'Stop after this many replies (default: the number of destinations).', min: 1, helpGroup: REMOTE }),
}

export const controlFlags = {
  ...remoteFlags,
  terminate: Flags.boolean({ description: 'revoke: also kill the process running the task.' }),
  signal: stringFlag({ description: 'revoke --terminate: the signal to send (e.g. SIGKILL).', dependsOn: ['terminate'] }),
}

/** The method argument of inspect and control: Celery's built-ins of that kind, or the app's own. */
export function methodArg(kind: ControlKind) {
  return Args.string({ required: true, description: `${visibleCommands(kind).join(', ')}, or a custom command` })
}

/** What inspect and control say about themselves in --help. */
export function broadcastDescription(kind: ControlKind): string {
  return (
    `Broadcasts ${kind === 'inspect' ? 'an inspect' : 'a control'} command and prints each node's reply as Celery does. ` +
    'A custom command (app.controlCommand) takes key=value words; with -A only the names the app registers are sent, ' +
    'and without it a name close to a built-in is refused as a typo before anything is broadcast.'
  )
}

export const migrateFlags = {
  limit: integerFlag({ char: 'n', description: 'Number of tasks to migrate (default: all).', min: 0 }),
  timeout: floatFlag({ char: 't', description: 'Stop once no message came for this many seconds.', default: 1, min: 0 }),
  'ack-messages': Flags.boolean({ char: 'a', description: 'Ack messages on the source once the destination has them (a move).' }),
  tasks: stringFlag({ char: 'T', description: 'Comma-separated task names to migrate (the others stay).' }),
  queues: stringFlag({ char: 'Q', description: "Comma-separated queues, `from:to` to rename (default: the app's default queue)." }),
  forever: Flags.boolean({ char: 'F', description: 'Keep migrating until stopped (TERM or Ctrl-C).' }),
}
