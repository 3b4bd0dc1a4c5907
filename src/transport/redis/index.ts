// The Redis driver's door for code outside transport/ that makes ioredis
// clients of its own (the Redis result backend, beat's and the locks' stores).
// Loading it installs the DEBUG filter (debug-filter.ts), so DEBUG=ioredis:*
// never prints a password; importing transport/index.ts does not load it.
export { redactDebugLine } from './debug-filter.js'
