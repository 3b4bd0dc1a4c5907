#!/usr/bin/env node
// `tsq --version` is answered before oclif loads: scripts call it to probe for
// tsq, and loading the framework alone costs more than the whole answer.
import { readFileSync } from 'node:fs'

const argv = process.argv.slice(2)
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v' || argv[0] === 'version')) {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  process.stdout.write(`tsq/${pkg.version} ${process.platform}-${process.arch} node-${process.version}\n`)
} else {
  // The bundle carries oclif and every command (scripts/bundle.mjs): one file to load.
  const { execute } = await import('../dist/bundle/tsq.js')
  await execute({ dir: import.meta.url })
}
