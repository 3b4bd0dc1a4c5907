// The fast path's reading of its commands' flags and arguments, made from the
// oclif command classes themselves (static flags, baseFlags, args, strict), as
// oclif's manifest is made: scripts/bundle.mjs runs fastSpecsOf over the
// built classes and bakes the result into dist/bundle/fast.cjs, so a flag
// added to one of these commands is the fast path's too, with no list to keep
// in step. A flag the fast path cannot read exactly as oclif would (no
// `fastValue` from oclif-flags.ts, `--no-x`, several values, an env fallback,
// exclusive or related flags...) leaves its whole command to oclif, and the
// unit test that expects all four on the fast path says which flag.
// Plain data and functions: no oclif here, the fast path's bundle loads this.

/** The commands bin/run.js tries the fast path for. */
export const FAST_COMMANDS = ['inspect', 'control', 'status', 'migrate'] as const
export type FastCommandId = (typeof FAST_COMMANDS)[number]

export interface FastFlag {
  /** How its value is read: a boolean takes none; the rest as oclif-flags.ts's parse reads them. */
  kind: 'boolean' | 'string' | 'integer' | 'float' | 'choice'
  char?: string
  default?: string | number | boolean
  choices?: readonly string[]
  min?: number
  max?: number
  /** The minimum itself is out (flag-values.ts's NumberRange). */
  minOpen?: boolean
  dependsOn?: readonly string[]
}

export interface FastCommandSpec {
  flags: Record<string, FastFlag>
  /** How many positional arguments oclif takes: [least, most]; most null for any number. */
  positionals: [number, number | null]
}

export type FastSpecs = Partial<Record<FastCommandId, FastCommandSpec>>

/** An oclif flag definition, as far as the fast path reads it. */
export type FlagShape = { type?: unknown } & Record<string, unknown>

/** An oclif command class, as far as the fast path reads it. */
export interface CommandShape {
  flags?: Record<string, FlagShape>
  baseFlags?: Record<string, FlagShape>
  enableJsonFlag?: boolean
  args?: Record<string, Record<string, unknown>>
  strict?: boolean
}

/** Properties of a flag that change only its help, or that oclif sets on every flag. */
const INERT = new Set([
  'parse',
  'input',
  'type',
  'name',
  'char',
  'description',
  'summary',
  'helpGroup',
  'helpValue',
  'helpLabel',
  'hidden',
  'noCacheDefault',
  'defaultHelp',
])
/** Properties the fast path reads. */
const READ = new Set(['default', 'dependsOn', 'fastValue', 'choices', 'min', 'max', 'minOpen', 'multiple', 'allowNo'])
const VALUE_KINDS = new Set(['string', 'integer', 'float', 'choice'])

/** A flag as the fast path reads it, or why it cannot. */
export function fastFlag(name: string, flag: FlagShape): FastFlag | string {
  for (const [key, value] of Object.entries(flag)) {
    if (INERT.has(key) || READ.has(key) || value === undefined || value === false) continue
    if (Array.isArray(value) && value.length === 0) continue
    return `--${name} has \`${key}\``
  }
  if (flag.multiple === true) return `--${name} takes several values`
  if (typeof flag.default === 'function') return `--${name} has a computed default`
  const common: Omit<FastFlag, 'kind'> = {
    ...(typeof flag.char === 'string' ? { char: flag.char } : {}),
    ...(flag.default !== undefined ? { default: flag.default as string | number | boolean } : {}),
    ...(Array.isArray(flag.dependsOn) && flag.dependsOn.length ? { dependsOn: flag.dependsOn as string[] } : {}),
  }
  if (flag.type === 'boolean') return flag.allowNo ? `--${name} takes --no-${name}` : { kind: 'boolean', ...common }
  const kind = flag.fastValue
  if (flag.type !== 'option' || typeof kind !== 'string' || !VALUE_KINDS.has(kind))
    return `--${name} has no fastValue (use oclif-flags.ts's flag types)`
  const numeric = kind === 'integer' || kind === 'float'
  return {
    kind: kind as FastFlag['kind'],
    ...common,
    ...(kind === 'choice' ? { choices: [...(flag.choices as string[])] } : {}),
    ...(numeric && typeof flag.min === 'number' ? { min: flag.min } : {}),
    ...(numeric && typeof flag.max === 'number' ? { max: flag.max } : {}),
    ...(numeric && flag.minOpen === true ? { minOpen: true } : {}),
  }
}

/** A command class as the fast path reads it (flags merged as oclif merges them), or why it cannot. */
export function fastCommandSpec(command: CommandShape): FastCommandSpec | string {
  // oclif's aggregateFlags: its own --json first, then baseFlags, then the command's flags.
  const all: Record<string, FlagShape> = {
    ...(command.enableJsonFlag ? { json: { type: 'boolean' } } : {}),
    ...command.baseFlags,
    ...command.flags,
  }
  const flags: Record<string, FastFlag> = {}
  for (const [name, flag] of Object.entries(all)) {
    const read = fastFlag(name, flag)
    if (typeof read === 'string') return read
    flags[name] = read
  }
  const args = Object.entries(command.args ?? {})
  let least = 0
  for (const [i, [name, arg]] of args.entries()) {
    if (arg.multiple || arg.options !== undefined || arg.default !== undefined) return `argument ${name} has more than a name`
    if (arg.required !== true) continue
    if (i !== least) return `argument ${name} is required after an optional one`
    least += 1
  }
  return { flags, positionals: [least, command.strict === false ? null : args.length] }
}

/** Each command's spec; `unreadable` says which ones stay on oclif's path, and why. */
export function fastSpecsOf(commands: Partial<Record<FastCommandId, CommandShape>>): { specs: FastSpecs; unreadable: string[] } {
  const specs: FastSpecs = {}
  const unreadable: string[] = []
  for (const id of FAST_COMMANDS) {
    const command = commands[id]
    if (!command) continue
    const spec = fastCommandSpec(command)
    if (typeof spec === 'string') unreadable.push(`${id}: ${spec}`)
    else specs[id] = spec
  }
  return { specs, unreadable }
}
