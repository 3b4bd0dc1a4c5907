export { migrate, MigrateError, parseQueueRoutes, taskIdentity } from './migrate.js'
export type { MigratedTask, MigrateOptions, MigrateResult, QueueRoute } from './migrate.js'
