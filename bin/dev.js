#!/usr/bin/env -S node --import tsx
// Runs the TypeScript sources directly, for development (oclif maps the bundle
// target to src/bundle/tsq.ts).
'use strict'
// Global options before the command name move behind it, as bin/run.js moves them.
Promise.all([import('../src/bundle/tsq.ts'), import('../src/cli/flags/global-options.ts'), import('../src/cli/report-error.ts')]).then(
  ([{ execute }, { hoistGlobalOptions }, { reportCliError }]) => {
    let args
    try {
      args = hoistGlobalOptions(process.argv.slice(2))
    } catch (error) {
      return reportCliError(error, { json: false, debug: false })
    }
    return execute({ args, development: true, dir: require('node:path').join(__dirname, '..', 'package.json') })
  },
)
