#!/bin/sh
':' //; if [ -n "$NODE_EXTRA_CA_CERTS" ] && [ -z "$TSQ_CONFIG_MODULE" ] && [ -z "$TSQ_NO_TRICKS" ] && [ -z "$TSQ_NO_DEFERRED_CA_CERTS" ]; then case "$1" in inspect|control|status|migrate) case " $NODE_OPTIONS " in *--use-openssl-ca*|*--use-system-ca*) ;; *) d=1; for a in "$@"; do case "$a" in -A*|--app|--app=*|--config|--config=*) d= ;; esac; done; if [ -n "$d" ]; then TSQ_DEFERRED_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS; export TSQ_DEFERRED_EXTRA_CA_CERTS; unset NODE_EXTRA_CA_CERTS; fi ;; esac ;; esac; fi; exec node "$0" "$@"
// The two lines above are sh, and to Node a string and a comment. Node 20 reads
// and parses NODE_EXTRA_CA_CERTS's file at every start, before any JavaScript
// runs, which costs a one-shot remote command most of its time
// (bench/README.md#tricks). For those commands without -A/--config (they run no
// user code), sh hands the file to tsq instead, which adds it to the trust of
// its own TLS connections to brokers, the only TLS those commands make
// (src/transport/tls.ts). Everything else, `node bin/run.js`, and
// TSQ_NO_DEFERRED_CA_CERTS or TSQ_NO_TRICKS, start as before.
//
// CommonJS on purpose (bin/package.json): the CJS loader starts faster than the
// ESM one, and `tsq --version` is answered before oclif loads at all, since
// scripts call it to probe for tsq. The tricks' switches are listed in
// docs/tricks.md; this file reads its own (TSQ_NO_FAST_PATH, TSQ_NO_CODE_CACHE).
'use strict'
const path = require('node:path')

// Children and anything reading the environment see it as the user set it;
// tsq's TLS reads the deferred file from the process object.
if (process.env.TSQ_DEFERRED_EXTRA_CA_CERTS !== undefined) {
  process.env.NODE_EXTRA_CA_CERTS = process.env.TSQ_DEFERRED_EXTRA_CA_CERTS
  delete process.env.TSQ_DEFERRED_EXTRA_CA_CERTS
  process[Symbol.for('tsq.deferredExtraCaCerts')] = process.env.NODE_EXTRA_CA_CERTS
}

let argv = process.argv.slice(2)

/** A trick's switch, or TSQ_NO_TRICKS, set (src/tricks/index.ts reads them the same way). */
const switchedOff = (name) => Boolean(process.env.TSQ_NO_TRICKS) || Boolean(process.env[name])

/** A bug in tsq (exit 70): the stack, since no command caught it. */
function reportCrash(error) {
  process.stderr.write(`${error && error.stack ? error.stack : error}\n`)
  process.exitCode = 70
}

function runOclif() {
  // A worker holds V8's young generation small from before the bundle loads, which would grow it (src/worker/tricks/young-generation.ts).
  const first =
    argv[0] === 'worker' ? import('../dist/worker/tricks/young-generation.js').then((m) => m.keepYoungGenerationSmall()) : Promise.resolve()
  // The bundle carries oclif and every command (scripts/bundle.mjs): one file to load.
  first
    .then(() => import('../dist/bundle/tsq.js'))
    .then(({ execute }) => execute({ args: argv, dir: path.join(__dirname, '..', 'package.json') }))
    .catch(reportCrash)
}

function exitWhenFlushed() {
  const pending = [process.stdout, process.stderr].filter((stream) => stream.writableLength > 0)
  if (pending.length === 0) process.exit()
  let left = pending.length
  for (const stream of pending) stream.once('drain', () => --left === 0 && process.exit())
}

/**
 * -A and --config load a module with import(), which a script compiled through
 * bin/code-cache.js cannot run on Node 20 (vm's loader for it is experimental
 * and warns); those runs, and TSQ_NO_CODE_CACHE, load the fast bundle with a plain require.
 */
const importsModules = Boolean(process.env.TSQ_CONFIG_MODULE) || argv.some((arg) => /^(-A|--app(=|$)|--config(=|$))/.test(arg))
const plainRequire = importsModules || switchedOff('TSQ_NO_CODE_CACHE')

let fastBundle
/** The fast path's bundle (src/cli/fast-path.ts): one file, no oclif, through V8's code cache. */
function fastModule() {
  if (!fastBundle) {
    const file = path.join(__dirname, '..', 'dist', 'bundle', 'fast.cjs')
    if (plainRequire) {
      fastBundle = require(file)
    } else {
      const { requireWithCodeCache } = require('./code-cache.js')
      fastBundle = requireWithCodeCache(file, (exports) => exports.codeCacheKey())
    }
  }
  return fastBundle
}

const FAST_COMMANDS = new Set(['inspect', 'control', 'status', 'migrate'])

/** inspect/control/status/migrate without oclif when the command line allows (src/cli/fast-path.ts). */
function tryFastPath() {
  if (!FAST_COMMANDS.has(argv[0])) return false
  const fast = fastModule()
  const plan = fast.planFastRun(argv, fast.FAST_SPECS)
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

/**
 * Celery's global options before the command name (`tsq -A ./tasks.js worker`,
 * `tsq -b URL inspect ping`) move behind it, where every command takes them
 * (src/cli/flags/global-options.ts); a line that starts with the command is left
 * alone. False when the line cannot be read (one line, exit 64, as Celery's).
 */
function hoistGlobalOptions() {
  // `tsq --version` answers without loading anything (scripts probe for tsq with it).
  if (argv.length === 0 || !argv[0].startsWith('-') || ['--version', '-v', '--help', '-h'].includes(argv[0])) return true
  const fast = fastModule()
  try {
    argv = fast.hoistGlobalOptions(argv)
    return true
  } catch (error) {
    fast.reportCliError(error, { json: argv.includes('-j') || argv.includes('--json'), debug: argv.includes('--debug') })
    return false
  }
}

if (!hoistGlobalOptions()) {
  // reported
} else if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v' || argv[0] === 'version')) {
  const { version } = require('../package.json')
  process.stdout.write(`tsq/${version} ${process.platform}-${process.arch} node-${process.version}\n`)
} else if (switchedOff('TSQ_NO_FAST_PATH') || !tryFastPath()) {
  runOclif()
}
