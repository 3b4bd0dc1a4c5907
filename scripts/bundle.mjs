// Bundles the CLI into dist/bundle so that starting `tsq` reads a few files
// instead of resolving hundreds of modules (oclif alone is ~100 files): the
// known lever for CLI start-up time. Broker drivers become chunks of their own,
// loaded only by the commands that use that broker; prompts, tsx and
// typescript stay in node_modules.
import { rmSync, renameSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { build } from 'esbuild'

// ioredis adds its ~570 command methods one by one to Commander.prototype.
// V8 gives a prototype object no shared map transitions, so each addition
// copies the whole property list: 10-18 ms of every `tsq` run that talks to
// Redis, most of what ioredis costs to load. Turning the prototype into a
// dictionary first (add and delete one property) makes the same additions
// cost under 1 ms; V8 makes it fast again when it is first used as a
// prototype. The build fails if ioredis changes the code this relies on.
const IOREDIS_COMMANDER = /[\\/]ioredis[\\/]built[\\/]utils[\\/]Commander\.js$/
const COMMAND_LOOP = 'commands.forEach(function (commandName) {'
const fastCommandPrototype = {
  name: 'ioredis-fast-command-prototype',
  setup(b) {
    b.onLoad({ filter: IOREDIS_COMMANDER }, async ({ path }) => {
      const source = await readFile(path, 'utf8')
      if (!source.includes(COMMAND_LOOP)) throw new Error(`${path}: the command loop this build patches is gone; see scripts/bundle.mjs`)
      const patched = source.replace(COMMAND_LOOP, `Commander.prototype.__tsqDictionary = true;\ndelete Commander.prototype.__tsqDictionary;\n${COMMAND_LOOP}`)
      return { contents: patched, loader: 'js' }
    })
  },
}

// oclif sorts its command list with String#localeCompare on every start. The
// first localeCompare in a process builds ICU's collator: 6-8 ms of every
// oclif-path command (worker, beat, multi, call, ...) and 2.6 MB more resident
// in every worker, for ids that are plain ASCII. The patch sorts them by code
// unit, which orders ASCII ids the same way. The build fails if oclif changes
// the line this relies on.
const OCLIF_PLUGIN = /[\\/]@oclif[\\/]core[\\/]lib[\\/]config[\\/]plugin\.js$/
const COMMAND_SORT = '.sort((a, b) => a.id.localeCompare(b.id));'
const plainCommandSort = {
  name: 'oclif-plain-command-sort',
  setup(b) {
    b.onLoad({ filter: OCLIF_PLUGIN }, async ({ path }) => {
      const source = await readFile(path, 'utf8')
      if (!source.includes(COMMAND_SORT)) throw new Error(`${path}: the command sort this build patches is gone; see scripts/bundle.mjs`)
      const patched = source.replace(COMMAND_SORT, '.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));')
      return { contents: patched, loader: 'js' }
    })
  },
}

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
  external: ['@inquirer/prompts', 'tsx', 'tsx/*', 'typescript'],
  plugins: [fastCommandPrototype, plainCommandSort],
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
  plugins: [fastCommandPrototype],
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
