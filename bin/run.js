#!/usr/bin/env node
// CommonJS on purpose (bin/package.json): the CJS loader starts faster than the
// ESM one, and `tsq --version` is answered before oclif loads at all, since
// scripts call it to probe for tsq.
'use strict'
const path = require('node:path')

const argv = process.argv.slice(2)

/** A bug in tsq (exit 70): the stack, since no command caught it. */
function reportCrash(error) {
  process.stderr.write(`${error && error.stack ? error.stack : error}\n`)
  process.exitCode = 70
}

function runOclif() {
  // The bundle carries oclif and every command (scripts/bundle.mjs): one file to load.
  import('../dist/bundle/tsq.js')
    .then(({ execute }) => execute({ dir: path.join(__dirname, '..', 'package.json') }))
    .catch(reportCrash)
}

function exitWhenFlushed() {
  const pending = [process.stdout, process.stderr].filter((stream) => stream.writableLength > 0)
  if (pending.length === 0) process.exit()
  let left = pending.length
  for (const stream of pending) stream.once('drain', () => --left === 0 && process.exit())
}

/** inspect/control/status without oclif when the command line allows (src/cli/fast-path.ts). */
function tryFastPath() {
  if (argv[0] !== 'inspect' && argv[0] !== 'control' && argv[0] !== 'status') return false
  const { requireWithCodeCache } = require('./code-cache.js')
  const fast = requireWithCodeCache(path.join(__dirname, '..', 'dist', 'bundle', 'fast.cjs'), (exports) => exports.codeCacheKey())
  const plan = fast.planFastRun(argv)
  if (!plan) return false
  fast
    .runFast(plan)
    .catch(reportCrash)
    // The broker connection is closed by now; what is left is Node tearing down
    // handles nobody waits for. Exit once the output is out (pipes can be async
    // on some platforms, so wait for a drain rather than assume).
    .then(() => exitWhenFlushed())
  return true
}

if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v' || argv[0] === 'version')) {
  const { version } = require('../package.json')
  process.stdout.write(`tsq/${version} ${process.platform}-${process.arch} node-${process.version}\n`)
} else if (process.env.TSQ_NO_FAST_PATH || !tryFastPath()) {
  runOclif()
}
