// The fast path of `tsq inspect`, `tsq control`, `tsq status` and `tsq migrate`:
// scripts and operators call these in loops, and loading oclif (its Config,
// plugins and every command) costs more than the broadcast itself (for a
// migrate, a visible share of moving ten thousand tasks). bin/run.js loads this
// module's own bundle (dist/bundle/fast.cjs) instead of oclif when the command
// line is one it can parse exactly as oclif would; anything else (help, a
// usage error, an unusual form) goes to oclif, so oclif stays the one voice for
// help and for usage errors. The flags come from the same specs as oclif's
// (flag-specs.ts), and the work from the same functions the oclif commands call.
import { parseArgs } from 'node:util'
import { parseBrokerUrl } from '../transport/index.js'
import { applyGlobalOptions, clientConfig, type GlobalFlagValues } from './client-config.js'
import { makeChalk } from './color.js'
import { CONTROL_FLAG_SPECS, GLOBAL_FLAG_SPECS, MIGRATE_FLAG_SPECS, REMOTE_FLAG_SPECS, type FlagSpec } from './flag-specs.js'
import { runMigrate, type MigrateFlagValues } from './migrate-command.js'
import { controlExtraArguments, runRemote, runStatus } from './remote-command.js'
import type { RemoteFlagValues } from './remote-flags.js'
import { reportCliError } from './report-error.js'

// bin/run.js moves Celery's global options behind the command name with this,
// taken from this bundle so that a line without them loads nothing more.
export { hoistGlobalOptions } from './global-options.js'
export { reportCliError } from './report-error.js'

type FastCommand = 'inspect' | 'control' | 'status' | 'migrate'

const COMMAND_FLAGS: Record<FastCommand, Record<string, FlagSpec>> = {
  inspect: { ...GLOBAL_FLAG_SPECS, ...REMOTE_FLAG_SPECS },
  control: { ...GLOBAL_FLAG_SPECS, ...CONTROL_FLAG_SPECS },
  status: { ...GLOBAL_FLAG_SPECS, ...REMOTE_FLAG_SPECS },
  migrate: { ...GLOBAL_FLAG_SPECS, ...MIGRATE_FLAG_SPECS },
}

/** How many positional arguments oclif takes: [least, most]. */
const POSITIONALS: Record<FastCommand, [number, number]> = {
  inspect: [1, Infinity],
  control: [1, Infinity],
  status: [0, 0],
  migrate: [2, 2],
}

type FlagValues = Record<string, string | number | boolean | undefined>

export interface FastPlan {
  command: FastCommand
  /** inspect/control: the method, then its argument words; migrate: source and destination. */
  positionals: string[]
  flags: FlagValues
}

function isFastCommand(name: string | undefined): name is FastCommand {
  return name === 'inspect' || name === 'control' || name === 'status' || name === 'migrate'
}

/**
 * The parsed command line, or undefined when oclif should handle it: help,
 * `--`, `-x=value` (oclif's reading of it differs from node's), a repeated or
 * unknown flag, a bad value, a missing method. oclif then prints its own error.
 */
export function planFastRun(argv: readonly string[]): FastPlan | undefined {
  const [command, ...rest] = argv
  if (!isFastCommand(command)) return undefined
  if (rest.some((arg) => arg === '--' || arg === '--help' || arg === '-h' || /^-[^-]=/.test(arg))) return undefined
  const specs = COMMAND_FLAGS[command]
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = {}
  for (const [name, spec] of Object.entries(specs)) {
    options[name] = { type: spec.kind === 'boolean' ? 'boolean' : 'string', ...(spec.char ? { short: spec.char } : {}) }
  }
  let parsed: ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true; strict: true; tokens: true }>>
  try {
    parsed = parseArgs({ args: rest, options, allowPositionals: true, strict: true, tokens: true })
  } catch {
    return undefined
  }
  const seen = new Set<string>()
  for (const token of parsed.tokens) {
    if (token.kind !== 'option') continue
    if (seen.has(token.name)) return undefined
    seen.add(token.name)
  }
  const flags: FlagValues = {}
  for (const [name, spec] of Object.entries(specs)) {
    const raw = parsed.values[name]
    const value = checkedValue(spec, raw === undefined ? spec.default : raw)
    if (value === INVALID) return undefined
    flags[name] = value
  }
  for (const [name, spec] of Object.entries(specs)) {
    if (flags[name] !== undefined && spec.dependsOn?.some((other) => !flags[other])) return undefined
  }
  const positionals = parsed.positionals
  const [least, most] = POSITIONALS[command]
  if (positionals.length < least || positionals.length > most) return undefined
  return { command, positionals, flags }
}

const INVALID = Symbol('invalid')

function checkedValue(spec: FlagSpec, raw: string | boolean | undefined): string | number | boolean | undefined | typeof INVALID {
  if (raw === undefined || typeof raw === 'boolean') return spec.kind === 'boolean' ? raw === true || undefined : raw
  if (spec.options && !spec.options.includes(raw)) return INVALID
  if (spec.kind === 'string' || spec.kind === 'boolean') return raw
  // Plain digits only: any other form click's reading accepts (spaces, a sign, an exponent) is oclif's to read.
  if (!(spec.kind === 'integer' ? /^-?\d+$/ : /^-?\d+(\.\d+)?$/).test(raw)) return INVALID
  const n = Number(raw)
  return spec.min !== undefined && n < spec.min ? INVALID : n
}

let usedScheme: string | undefined

/**
 * Which broker this run talked to (migrate: both, in their direction, since a
 * source runs the consuming code and a destination the publishing code):
 * bin/code-cache.js keeps one V8 code cache covering each.
 */
export function codeCacheKey(): string | undefined {
  return usedScheme
}

export async function runFast(plan: FastPlan): Promise<void> {
  const { flags } = plan
  const json = flags.json === true
  const print = (line: string) => process.stdout.write(`${line}\n`)
  const color = makeChalk(flags['no-color'] === true)
  try {
    const globals = flags as GlobalFlagValues
    applyGlobalOptions(globals)
    const config = await clientConfig(globals)
    usedScheme = schemeOf(config.brokerUrl)
    const remoteFlags = flags as unknown as RemoteFlagValues & { quiet?: boolean; broker?: string }
    let result: unknown
    if (plan.command === 'migrate') {
      const [source, destination] = plan.positionals as [string, string]
      usedScheme = `${schemeOf(source)}>${schemeOf(destination)}`
      result = await runMigrate({ source, destination, flags: flags as unknown as MigrateFlagValues, defaultQueue: config.defaultQueue, lines: !json && flags.quiet !== true })
    } else if (plan.command === 'status') {
      result = await runStatus({ flags: remoteFlags, brokerUrl: config.brokerUrl, transportSettings: config.transportSettings, json, color, print })
    } else {
      const [method, ...words] = plan.positionals as [string, ...string[]]
      result = await runRemote({
        kind: plan.command,
        method,
        words,
        extraArguments: plan.command === 'control' ? controlExtraArguments(method, flags as { terminate?: boolean; signal?: string }) : undefined,
        flags: remoteFlags,
        brokerUrl: config.brokerUrl,
        transportSettings: config.transportSettings,
        json,
        color,
        print,
      })
    }
    if (json) process.stdout.write(`${JSON.stringify(result)}\n`)
  } catch (error) {
    reportCliError(error as Error & { code?: string }, { json, debug: flags.debug === true })
  }
}

function schemeOf(url: string): string | undefined {
  try {
    return parseBrokerUrl(url).scheme
  } catch {
    return undefined
  }
}
