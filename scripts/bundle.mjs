// Bundles the CLI into dist/bundle so that starting `tsq` reads a few files
// instead of resolving hundreds of modules (oclif alone is ~100 files): the
// known lever for CLI start-up time. Broker drivers become chunks of their own,
// loaded only by the commands that use that broker; prompts, tsx and
// typescript stay in node_modules.
import { rmSync, renameSync } from 'node:fs'
import { build } from 'esbuild'
import { ioredisCommandPrototype, ioredisLateSocketErrors, oclifPlainSort, patchPlugins } from './bundle-patches.mjs'

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
  external: [
    '@inquirer/prompts',
    'tsx',
    'tsx/*',
    'typescript',
    'better-sqlite3',
    'pg',
    'mysql2',
    'mysql2/*',
    'koffi',
    '@opentelemetry/api',
  ],
  // Whitespace and comments out: V8 keeps every loaded script's source in the heap for the life of
  // the process, and one non-Latin-1 character in a kept comment (an arrow, a dash) stores the whole
  // bundle as two-byte text, in every worker, child and thread. Names are kept, so a --debug stack
  // trace still reads.
  minifyWhitespace: true,
  minifySyntax: true,
  plugins: patchPlugins([ioredisCommandPrototype, oclifPlainSort, ioredisLateSocketErrors]),
  // oclif is CommonJS: give its require() calls a real require inside ESM.
  banner: { js: "import { createRequire as __tsqCreateRequire } from 'node:module'; const require = __tsqCreateRequire(import.meta.url);" },
})

// The fast path of inspect/control/status/migrate (src/cli/fast-path.ts): one
// CommonJS file without oclif, so bin/run.js can load it through V8's code
// cache (bin/code-cache.js); Node 20 offers that cache only to scripts, not to
// ES modules. Broker drivers are inside, evaluated only when used. Its flag
// specs are read here from the built command classes (src/cli/fast-specs.ts)
// and baked in as FAST_SPECS; a command whose flags it cannot read stays on oclif.
const { FAST_COMMANDS, fastSpecsOf } = await import('../dist/cli/fast-specs.js')
const commands = Object.fromEntries(
  await Promise.all(FAST_COMMANDS.map(async (id) => [id, (await import(`../dist/commands/${id}.js`)).default])),
)
const { specs, unreadable } = fastSpecsOf(commands)
for (const why of unreadable) console.warn(`fast path: ${why}; that command runs through oclif (see src/cli/fast-specs.ts)`)
await build({
  stdin: {
    contents: `export * from './cli/fast-path.js'\nexport const FAST_SPECS = ${JSON.stringify(specs)}\n`,
    resolveDir: 'dist',
    sourcefile: 'fast-entry.js',
  },
  outfile: 'dist/bundle-next/fast.cjs',
  // Less source to read and pre-parse on every start; names are kept, so a
  // --debug stack trace still reads.
  minifyWhitespace: true,
  minifySyntax: true,
  plugins: patchPlugins([ioredisCommandPrototype, ioredisLateSocketErrors]),
  // -A loads the app module as the worker does, TypeScript through tsx, which stays in node_modules.
  external: ['tsx', 'tsx/*', 'better-sqlite3', 'pg', 'mysql2', 'mysql2/*', 'koffi', '@opentelemetry/api'],
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
