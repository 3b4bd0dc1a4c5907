// Public names of the cluster state: the one model of workers and tasks built
// from events (Celery's events.State with Flower's additions), which `tsq
// events` (cli/events/) and the dashboard both read, and Flower's task search
// over it. Pure: no I/O; other layers import it here.
export { ClusterState, FINISHED_STATES, SORT_KEYS, TASK_FIELDS, workerAlive } from './state.js'
export type {
  ClusterStateOptions,
  PersistedState,
  StateChange,
  TaskPage,
  TaskQuery,
  TaskRecord,
  TimelineEntry,
  WorkerRecord,
} from './state.js'
export { QuerySyntaxError, SEARCH_FIELDS, fold, kwargsPairs, matches, parseQuery } from './search.js'
export type { Query, SearchDocument } from './search.js'
