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

rmSync('dist/bundle-old', { recursive: true, force: true })
try {
  renameSync('dist/bundle', 'dist/bundle-old')
} catch {
  // First build: nothing to move aside.
}
renameSync('dist/bundle-next', 'dist/bundle')
rmSync('dist/bundle-old', { recursive: true, force: true })
