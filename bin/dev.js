#!/usr/bin/env -S node --import tsx
// Runs the TypeScript sources directly, for development (oclif maps the bundle
// target to src/bundle/tsq.ts).
'use strict'
import('@oclif/core').then(({ execute }) => execute({ development: true, dir: require('node:path').join(__dirname, '..', 'package.json') }))
