// The CLI's entry for oclif's explicit command discovery. `npm run build`
// replaces the compiled copy of this file with the esbuild bundle of the
// same exports (scripts/bundle.mjs); bin/dev.js runs it from the sources.
export { COMMANDS, execute } from '../cli/commands.js'
