// Bundles the CLI into dist/bundle so that starting `tsq` reads a few files
// instead of resolving hundreds of modules (oclif alone is ~100 files): the
// known lever for CLI start-up time. Broker drivers become chunks of their own,
// loaded only by the commands that use that broker; prompts, tsx and
// typescript stay in node_modules.
import { rmSync, renameSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { build } from 'esbuild'

/**
 * An esbuild plugin that replaces `find` with `replacement` in the module
 * matching `filter`. The build fails when `find` is gone (the dependency
 * changed), so a patch never silently stops applying.
 */
function sourcePatch(name, filter, find, replacement) {
  return {
    name,
    setup(b) {
      b.onLoad({ filter }, async ({ path }) => {
        const source = await readFile(path, 'utf8')
        if (!source.includes(find)) throw new Error(`${path}: the code the ${name} patch relies on is gone; see scripts/bundle.mjs`)
        return { contents: source.replace(find, replacement), loader: 'js' }
      })
    },
  }
}

// ioredis adds its ~570 command methods one by one to Commander.prototype.
// V8 gives a prototype object no shared map transitions, so each addition
// copies the whole property list: 10-18 ms of every `tsq` run that talks to
// Redis, most of what ioredis costs to load. Turning the prototype into a
// dictionary first (add and delete one property) makes the same additions
// cost under 1 ms; V8 makes it fast again when it is first used as a
// prototype.
const COMMAND_LOOP = 'commands.forEach(function (commandName) {'
const fastCommandPrototype = sourcePatch(
  'ioredis-fast-command-prototype',
  /[\\/]ioredis[\\/]built[\\/]utils[\\/]Commander\.js$/,
  COMMAND_LOOP,
  `Commander.prototype.__tsqDictionary = true;\ndelete Commander.prototype.__tsqDictionary;\n${COMMAND_LOOP}`,
)

// oclif sorts its command list with String#localeCompare on every start. The
// first localeCompare in a process builds ICU's collator: 6-8 ms of every
// oclif-path command (worker, beat, multi, call, ...) and 2.6 MB more resident
// in every worker, for ids that are plain ASCII. The patch sorts them by code
// unit, which orders ASCII ids the same way.
const plainCommandSort = sourcePatch(
  'oclif-plain-command-sort',
  /[\\/]@oclif[\\/]core[\\/]lib[\\/]config[\\/]plugin\.js$/,
  '.sort((a, b) => a.id.localeCompare(b.id));',
  '.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));',
)

// ioredis listens for a socket's first 'error' only (stream.once). A TLS socket the server
// resets can emit a second one (ECONNRESET after the handshake's failure), which then has no
// listener and kills the process: seen as a crash of `tsq result` against a TLS Redis that
// refused the client, instead of its one-line refusal. The first error still goes to ioredis,
// which closes and reconnects; later ones on that dead socket are dropped.
const IOREDIS_ERROR_ONCE = 'stream.once("error", eventHandler.errorHandler(_this));'
const ioredisLateSocketErrors = sourcePatch(
  'ioredis-late-socket-errors',
  /[\\/]ioredis[\\/]built[\\/]Redis\.js$/,
  IOREDIS_ERROR_ONCE,
  `${IOREDIS_ERROR_ONCE}\nstream.on("error", () => {});`,
)

await build({
  entryPoints: { tsq: 'dist/bundle/tsq.js' },
  allowOverwrite: true,
  // Built beside the live bundle and swapped in, so no stale chunk survives a
  // rebuild and a CLI started meanwhile never sees half a bundle.
  outdir: 'dist/bundle-next',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: false,
  logLevel: 'warning',
  // The database clients of the db+ result backend load lazily from node_modules; better-sqlite3 and koffi (malloc_trim, idle-trim.ts) are native addons.
  external: ['@inquirer/prompts', 'tsx', 'tsx/*', 'typescript', 'better-sqlite3', 'pg', 'mysql2', 'mysql2/*', 'koffi'],
  // Whitespace and comments out: V8 keeps every loaded script's source in the heap for the life of
  // the process, and a single non-Latin-1 character in a kept comment (an arrow, a dash) stores the
  // whole 1.4 MB bundle as two-byte text: ~4 MB of every worker, child and thread at rest. Names are
  // kept, so a --debug stack trace still reads.
  minifyWhitespace: true,
  minifySyntax: true,
  plugins: [fastCommandPrototype, plainCommandSort, ioredisLateSocketErrors],
  // oclif is CommonJS: give its require() calls a real require inside ESM.
  banner: { js: "import { createRequire as __tsqCreateRequire } from 'node:module'; const require = __tsqCreateRequire(import.meta.url);" },
})

// The fast path of inspect/control/status (src/cli/fast-path.ts): one CommonJS
// file without oclif, so bin/run.js can load it through V8's code cache
// (bin/code-cache.js); Node 20 offers that cache only to scripts, not to ES
// modules. Broker drivers are inside, evaluated only when used.
await build({
  entryPoints: { fast: 'dist/cli/fast-path.js' },
  outdir: 'dist/bundle-next',
  outExtension: { '.js': '.cjs' },
  // Less source to read and pre-parse on every start; names are kept, so a
  // --debug stack trace still reads.
  minifyWhitespace: true,
  minifySyntax: true,
  plugins: [fastCommandPrototype, ioredisLateSocketErrors],
  // -A loads the app module as the worker does, TypeScript through tsx, which stays in node_modules.
  external: ['tsx', 'tsx/*', 'better-sqlite3', 'pg', 'mysql2', 'mysql2/*', 'koffi'],
  // load-app.js's tsxImportUrl (import.meta.resolve, for pool processes) comes
  // along with loadApp but never runs here: nothing in the fast path starts a pool.
  logOverride: { 'empty-import-meta': 'silent' },
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  sourcemap: false,
  logLevel: 'warning',
})

rmSync('dist/bundle-old', { recursive: true, force: true })
try {
  renameSync('dist/bundle', 'dist/bundle-old')
} catch {
  // First build: nothing to move aside.
}
renameSync('dist/bundle-next', 'dist/bundle')
rmSync('dist/bundle-old', { recursive: true, force: true })
