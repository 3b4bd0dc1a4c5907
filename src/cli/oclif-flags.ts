import { Flags } from '@oclif/core'
import { CONTROL_FLAG_SPECS, GLOBAL_FLAG_SPECS, REMOTE_FLAG_SPECS, type FlagSpec } from './flag-specs.js'

type OclifFlagFor<S> = S extends { kind: 'boolean' }
  ? ReturnType<typeof booleanFlag>
  : S extends { kind: 'integer' }
    ? S extends { default: string } ? ReturnType<typeof integerWithDefault> : ReturnType<typeof integerOptional>
    : S extends { default: string } ? ReturnType<typeof stringWithDefault> : ReturnType<typeof stringOptional>

const booleanFlag = () => Flags.boolean()
const stringWithDefault = () => Flags.string({ default: '' })
const stringOptional = () => Flags.string()
const integerWithDefault = () => Flags.integer({ default: 0 })
const integerOptional = () => Flags.integer()

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
      return Flags.integer({ ...common, ...(spec.min !== undefined ? { min: spec.min } : {}), ...(spec.default !== undefined ? { default: Number(spec.default) } : {}) })
    case 'string':
      return Flags.string({ ...common, ...(spec.options ? { options: [...spec.options] } : {}), ...(spec.default !== undefined ? { default: spec.default } : {}) })
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
