import { Flags } from '@oclif/core'
import { optionLabel } from './errors.js'
import { CONTROL_FLAG_SPECS, GLOBAL_FLAG_SPECS, MIGRATE_FLAG_SPECS, REMOTE_FLAG_SPECS, type FlagSpec } from './flag-specs.js'
import { choiceValue, floatValue, integerValue, type NumberRange } from './flag-values.js'

// oclif's flag types with click's sentence for a bad value (flag-values.ts):
// `Invalid value for '-c' / '--concurrency': 'abc' is not a valid integer.`,
// where oclif's own integer and options say "Parsing --concurrency" or
// "Expected --pool=x to be one of: ...".

const labelOf = (flag: { name: string; char?: string }) => optionLabel(flag.name, flag.char)

/** Flags.integer, with click's messages. */
export const integerFlag = Flags.custom<number, NumberRange>({
  parse: async (input, _context, flag) => integerValue(labelOf(flag), input, flag),
})

/** A number (seconds, mostly), as click.FLOAT and click.FloatRange read it. */
export const floatFlag = Flags.custom<number, NumberRange>({
  parse: async (input, _context, flag) => floatValue(labelOf(flag), input, flag),
})

const choiceDefinition = Flags.custom<string, { choices: readonly string[] }>({
  parse: async (input, _context, flag) => choiceValue(labelOf(flag), input, flag.choices),
})

/**
 * Flags.string's `options`, as `choices`, with click's message for a value
 * that is not one of them (oclif checks `options` before any parse, in its own
 * words); help shows them as the flag's value.
 */
export const choiceFlag = ((options: { choices: readonly string[]; helpValue?: string }) =>
  choiceDefinition({ helpValue: options.choices.join('|'), ...options } as Parameters<typeof choiceDefinition>[0])) as unknown as typeof choiceDefinition

type OclifFlagFor<S> = S extends { kind: 'boolean' }
  ? ReturnType<typeof booleanFlag>
  : S extends { kind: 'integer' }
    ? S extends { default: string } ? ReturnType<typeof integerWithDefault> : ReturnType<typeof integerOptional>
    : S extends { kind: 'float' }
      ? S extends { default: string } ? ReturnType<typeof floatWithDefault> : ReturnType<typeof floatOptional>
      : S extends { default: string } ? ReturnType<typeof stringWithDefault> : ReturnType<typeof stringOptional>

// These builders exist for their types only (ReturnType<typeof …> above): oclif's overloads give no other name for them.
/* eslint-disable @typescript-eslint/no-unused-vars, no-useless-assignment -- used as types only, above */
const booleanFlag = () => Flags.boolean()
const stringWithDefault = () => Flags.string({ default: '' })
const stringOptional = () => Flags.string()
const integerWithDefault = () => integerFlag({ default: 0 })
const integerOptional = () => integerFlag()
const floatWithDefault = () => floatFlag({ default: 0 })
const floatOptional = () => floatFlag()
/* eslint-enable @typescript-eslint/no-unused-vars, no-useless-assignment */

function oclifFlag(spec: FlagSpec) {
  const common = {
    description: spec.description,
    ...(spec.char ? { char: spec.char as 'a' } : {}),
    ...(spec.helpGroup ? { helpGroup: spec.helpGroup } : {}),
    ...(spec.dependsOn ? { dependsOn: [...spec.dependsOn] } : {}),
  }
  switch (spec.kind) {
    case 'boolean':
      return Flags.boolean(common)
    case 'integer':
      return integerFlag({ ...common, ...(spec.min !== undefined ? { min: spec.min } : {}), ...(spec.default !== undefined ? { default: Number(spec.default) } : {}) })
    case 'float':
      return floatFlag({ ...common, ...(spec.min !== undefined ? { min: spec.min } : {}), ...(spec.default !== undefined ? { default: Number(spec.default) } : {}) })
    case 'string':
      if (spec.options) return choiceFlag({ ...common, choices: spec.options, ...(spec.default !== undefined ? { default: spec.default } : {}) })
      return Flags.string({ ...common, ...(spec.default !== undefined ? { default: spec.default } : {}) })
  }
}

/** oclif flag definitions from the shared specs, typed as oclif would type them. */
export function oclifFlags<T extends Record<string, FlagSpec>>(specs: T): { [K in keyof T]: OclifFlagFor<T[K]> } {
  const out: Record<string, unknown> = {}
  for (const [name, spec] of Object.entries(specs)) out[name] = oclifFlag(spec)
  return out as { [K in keyof T]: OclifFlagFor<T[K]> }
}

export const globalFlags = oclifFlags(GLOBAL_FLAG_SPECS)
export const remoteFlags = oclifFlags(REMOTE_FLAG_SPECS)
export const controlFlags = oclifFlags(CONTROL_FLAG_SPECS)
export const migrateFlags = oclifFlags(MIGRATE_FLAG_SPECS)
