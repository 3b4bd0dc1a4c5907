#!/usr/bin/env node
// CommonJS on purpose (bin/package.json): the CJS loader starts faster than the
// ESM one, and `tsq --version` is answered before oclif loads at all, since
// scripts call it to probe for tsq.
'use strict'
const argv = process.argv.slice(2)
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v' || argv[0] === 'version')) {
  const { version } = require('../package.json')
  process.stdout.write(`tsq/${version} ${process.platform}-${process.arch} node-${process.version}\n`)
} else {
  // The bundle carries oclif and every command (scripts/bundle.mjs): one file to load.
  import('../dist/bundle/tsq.js')
    .then(({ execute }) => execute({ dir: require('node:path').join(__dirname, '..', 'package.json') }))
    .catch((error) => {
      process.stderr.write(`${error && error.stack ? error.stack : error}\n`)
      process.exitCode = 70
    })
}
