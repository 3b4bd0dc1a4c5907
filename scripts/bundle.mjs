// Bundles the CLI into dist/bundle so that starting `tsq` reads a few files
// instead of resolving hundreds of modules (oclif alone is ~100 files): the
// known lever for CLI start-up time. Broker drivers become chunks of their own,
// loaded only by the commands that use that broker; prompts, tsx and
// typescript stay in node_modules.
import { rmSync, renameSync } from 'node:fs'
import { build } from 'esbuild'

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
