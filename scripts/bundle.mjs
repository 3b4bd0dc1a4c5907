// Bundles the CLI into dist/bundle so that starting `tsq` reads a few files
// instead of resolving hundreds of modules (oclif alone is ~100 files): the
// known lever for CLI start-up time. Broker drivers and prompts stay outside
// the bundle and are imported only by the commands that need them.
import { build } from 'esbuild'

await build({
  entryPoints: { tsq: 'dist/cli/commands.js' },
  allowOverwrite: true,
  outdir: 'dist/bundle',
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
