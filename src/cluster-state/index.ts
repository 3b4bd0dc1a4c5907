// Public names of the cluster state: the one model of workers and tasks built
// from events (Celery's events.State with Flower's additions), which `tsq
// events` (cli/events/) and the dashboard both read, and Flower's task search
// over it. Pure: no I/O; other layers import it here.
export { ClusterState } from './state.js'
export type { ClusterStateOptions } from './state.js'
export { FINISHED_STATES, TASK_FIELDS, workerAlive } from './records.js'
export type { PersistedState, StateChange, TaskRecord, TimelineEntry, WorkerRecord } from './records.js'
export { SORT_KEYS } from './task-query.js'
export type { TaskPage, TaskQuery } from './task-query.js'
export { QuerySyntaxError, SEARCH_FIELDS, fold, kwargsPairs, matches, parseQuery } from './search.js'
export type { Query, SearchDocument } from './search.js'
