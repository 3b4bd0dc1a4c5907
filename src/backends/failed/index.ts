// The failed-task inbox's stores on the result backends (docs/failed-tasks.md).
export { decodeKeptMessage, encodeKeptMessage, KEPT_MAX, KEPT_MAX_BODY_BYTES, KEPT_TTL_SECONDS } from './kept-message.js'
export type { KeptMessage } from './kept-message.js'
export type { FailedStore } from './store.js'
export { RedisFailedStore } from './redis-store.js'
export { SqlFailedStore } from './sql-store.js'
export { FileFailedStore } from './file-store.js'
