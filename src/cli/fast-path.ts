// The fast path of `tsq inspect`, `tsq control`, `tsq status` and `tsq migrate`:
// scripts and operators call these in loops, and loading oclif (its Config,
// plugins and every command) costs more than the broadcast itself
// (bench/README.md#cli-latency). bin/run.js loads this module's own bundle
// (dist/bundle/fast.cjs) instead of oclif when the command line is one it can
// read exactly as oclif would; anything else (help, a usage error, an unusual
// form) goes to oclif, so oclif stays the one voice for help and usage errors.
// The flags are read by the specs the build takes from the command classes
// (fast-specs.ts, baked into the bundle as FAST_SPECS), and the work is done
// by the same functions the oclif commands call. Switch: TSQ_NO_FAST_PATH.
import { parseArgs } from 'node:util'
import { parseBrokerUrl } from '../transport/index.js'
import { applyGlobalOptions, clientConfig, type GlobalFlagValues } from './client-config.js'
import { makeChalk } from './color.js'
import type { FastCommandId, FastFlag, FastSpecs } from './fast-specs.js'
import { runMigrate, type MigrateFlagValues } from './migrate-command.js'
import { controlExtraArguments, runRemote, runStatus } from './remote-command.js'
import type { RemoteFlagValues } from './remote-flags.js'
import { reportCliError } from './report-error.js'

// bin/run.js moves Celery's global options behind the command name with this,
// taken from this bundle so that a line without them loads nothing more.
export { hoistGlobalOptions } from './global-options.js'
export { reportCliError } from './report-error.js'

type FlagValues = Record<string, string | number | boolean | undefined>

export interface FastPlan {
  command: FastCommandId
  /** inspect/control: the method, then its argument words; migrate: source and destination. */
  positionals: string[]
  flags: FlagValues
}

/**
 * The parsed command line, or undefined when oclif should handle it: a command
 * without a spec, help, `--`, `-x=value` (oclif's reading of it differs from
 * node's), a repeated or unknown flag, a bad value, a wrong number of
 * arguments. oclif then prints its own error.
 */
export function planFastRun(argv: readonly string[], specs: FastSpecs): FastPlan | undefined {
  const [command, ...rest] = argv
  const spec = command === undefined ? undefined : specs[command as FastCommandId]
  if (!spec) return undefined
  if (rest.some((arg) => arg === '--' || arg === '--help' || arg === '-h' || /^-[^-]=/.test(arg))) return undefined
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = {}
  for (const [name, flag] of Object.entries(spec.flags)) {
    options[name] = { type: flag.kind === 'boolean' ? 'boolean' : 'string', ...(flag.char ? { short: flag.char } : {}) }
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
  for (const [name, flag] of Object.entries(spec.flags)) {
    const value = flagValue(flag, parsed.values[name])
    if (value === INVALID) return undefined
    flags[name] = value
  }
  for (const [name, flag] of Object.entries(spec.flags)) {
    if (flags[name] !== undefined && flag.dependsOn?.some((other) => !flags[other])) return undefined
  }
  const positionals = parsed.positionals
  const [least, most] = spec.positionals
  if (positionals.length < least || (most !== null && positionals.length > most)) return undefined
  return { command: command as FastCommandId, positionals, flags }
}

const INVALID = Symbol('invalid')

/** The value oclif's parse would give, or INVALID where oclif would refuse it or read it otherwise. */
function flagValue(flag: FastFlag, raw: string | boolean | undefined): string | number | boolean | undefined | typeof INVALID {
  // oclif uses a default as it is, without parsing it.
  if (raw === undefined) return flag.default
  if (typeof raw === 'boolean') return flag.kind === 'boolean' ? raw : INVALID
  switch (flag.kind) {
    case 'boolean':
      return INVALID
    case 'string':
      return raw
    case 'choice':
      return flag.choices?.includes(raw) ? raw : INVALID
    case 'integer':
    case 'float': {
      // Plain digits only: any other form click's reading accepts (spaces, a sign, an exponent) is oclif's to read.
      if (!(flag.kind === 'integer' ? /^-?\d+$/ : /^-?\d+(\.\d+)?$/).test(raw)) return INVALID
      const n = Number(raw)
      const below = flag.min !== undefined && (flag.minOpen ? n <= flag.min : n < flag.min)
      return below || (flag.max !== undefined && n > flag.max) ? INVALID : n
    }
  }
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
    const remote = {
      flags: flags as unknown as RemoteFlagValues & { quiet?: boolean; broker?: string },
      brokerUrl: config.brokerUrl,
      transportSettings: config.transportSettings,
      json,
      color,
      print,
    }
    let result: unknown
    if (plan.command === 'migrate') {
      const [source, destination] = plan.positionals as [string, string]
      usedScheme = `${schemeOf(source)}>${schemeOf(destination)}`
      result = await runMigrate({
        source,
        destination,
        flags: flags as unknown as MigrateFlagValues,
        defaultQueue: config.defaultQueue,
        lines: !json && flags.quiet !== true,
      })
    } else if (plan.command === 'status') {
      result = await runStatus(remote)
    } else {
      const [method, ...words] = plan.positionals as [string, ...string[]]
      result = await runRemote({
        ...remote,
        kind: plan.command,
        method,
        words,
        extraArguments:
          plan.command === 'control' ? controlExtraArguments(method, flags as { terminate?: boolean; signal?: string }) : undefined,
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
