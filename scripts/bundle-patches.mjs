// The patches scripts/bundle.mjs applies to its dependencies' code as it
// bundles them. Each replaces one exact line; the build fails when that line
// is gone (the dependency changed), so a patch never silently stops applying,
// and test/unit/transport/library-pins.test.ts checks the same lines in the
// versions pinned there. The two performance patches are tricks
// (src/tricks/index.ts): their switch, or TSQ_NO_TRICKS, set when
// `npm run build` runs leaves the line alone. ioredisLateSocketErrors is a fix
// and has no switch.
import { readFile } from 'node:fs/promises'

/**
 * One exact replacement in the module matching `filter`; a trick names itself
 * as src/tricks/index.ts does, and the switch that leaves it out.
 */
function sourcePatch(name, filter, find, replacement, trick) {
  return { name, filter, find, replacement, ...trick }
}

// ioredis adds its ~570 command methods one by one to Commander.prototype, and
// V8 copies a prototype's whole property list on each addition; a prototype in
// dictionary mode (add and delete one property first) takes them cheaply, and
// V8 makes it fast again when it is first used as one (bench/README.md#tricks).
const COMMAND_LOOP = 'commands.forEach(function (commandName) {'
export const ioredisCommandPrototype = sourcePatch(
  'ioredis-fast-command-prototype',
  /[\\/]ioredis[\\/]built[\\/]utils[\\/]Commander\.js$/,
  COMMAND_LOOP,
  `Commander.prototype.__tsqDictionary = true;\ndelete Commander.prototype.__tsqDictionary;\n${COMMAND_LOOP}`,
  { trick: 'ioredisCommandPrototype', trickEnv: 'TSQ_NO_IOREDIS_PROTOTYPE_PATCH' },
)

// oclif sorts its command list with String#localeCompare on every start, and
// the first localeCompare in a process builds ICU's collator (time and resident
// memory, bench/README.md#tricks); the ids are ASCII, so code-unit order is the same.
export const oclifPlainSort = sourcePatch(
  'oclif-plain-command-sort',
  /[\\/]@oclif[\\/]core[\\/]lib[\\/]config[\\/]plugin\.js$/,
  '.sort((a, b) => a.id.localeCompare(b.id));',
  '.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));',
  { trick: 'oclifPlainSort', trickEnv: 'TSQ_NO_OCLIF_SORT_PATCH' },
)

// ioredis listens for a socket's first 'error' only (stream.once). A TLS socket the server
// resets can emit a second one (ECONNRESET after the handshake's failure), which then has no
// listener and kills the process: seen as a crash of `tsq result` against a TLS Redis that
// refused the client, instead of its one-line refusal. The first error still goes to ioredis,
// which closes and reconnects; later ones on that dead socket are dropped.
const IOREDIS_ERROR_ONCE = 'stream.once("error", eventHandler.errorHandler(_this));'
export const ioredisLateSocketErrors = sourcePatch(
  'ioredis-late-socket-errors',
  /[\\/]ioredis[\\/]built[\\/]Redis\.js$/,
  IOREDIS_ERROR_ONCE,
  `${IOREDIS_ERROR_ONCE}\nstream.on("error", () => {});`,
)

export const ALL_PATCHES = [ioredisCommandPrototype, oclifPlainSort, ioredisLateSocketErrors]

const isSet = (value) => value !== undefined && value !== ''

/** Whether a patch applies to this build: a fix always, a trick unless its switch or TSQ_NO_TRICKS is set. */
export function patchApplies(patch, env = process.env) {
  return !patch.trickEnv || (!isSet(env.TSQ_NO_TRICKS) && !isSet(env[patch.trickEnv]))
}

/** The patches as esbuild plugins; those switched off are left out. */
export function patchPlugins(patches, env = process.env) {
  return patches
    .filter((patch) => patchApplies(patch, env))
    .map(({ name, filter, find, replacement }) => ({
      name,
      setup(b) {
        b.onLoad({ filter }, async ({ path }) => {
          const source = await readFile(path, 'utf8')
          if (!source.includes(find))
            throw new Error(`${path}: the code the ${name} patch relies on is gone; see scripts/bundle-patches.mjs`)
          return { contents: source.replace(find, replacement), loader: 'js' }
        })
      },
    }))
}
