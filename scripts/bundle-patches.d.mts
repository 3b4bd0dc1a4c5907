// Types of bundle-patches.mjs, for the tests that read its patches.
export interface SourcePatch {
  name: string
  filter: RegExp
  find: string
  replacement: string
  /** A trick's name in src/tricks/index.ts, and its switch; none for a fix. */
  trick?: string
  trickEnv?: string
}
export const ioredisCommandPrototype: SourcePatch
export const oclifPlainSort: SourcePatch
export const ioredisLateSocketErrors: SourcePatch
export const ALL_PATCHES: SourcePatch[]
export function patchApplies(patch: SourcePatch, env?: NodeJS.ProcessEnv): boolean
export function patchPlugins(patches: SourcePatch[], env?: NodeJS.ProcessEnv): unknown[]
