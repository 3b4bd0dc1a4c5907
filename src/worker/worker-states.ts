// A worker's states, Celery's shutdown phases among them, and the moves allowed between them.
export const WorkerStates = {
  CREATED: 'CREATED',
  STARTING: 'STARTING',
  RUNNING: 'RUNNING',
  WARM_SHUTDOWN: 'WARM_SHUTDOWN',
  SOFT_SHUTDOWN: 'SOFT_SHUTDOWN',
  COLD_SHUTDOWN: 'COLD_SHUTDOWN',
  STOPPED: 'STOPPED',
} as const
export type WorkerState = keyof typeof WorkerStates

const TRANSITIONS: Record<WorkerState, readonly WorkerState[]> = {
  CREATED: ['STARTING', 'STOPPED'],
  STARTING: ['RUNNING', 'WARM_SHUTDOWN', 'SOFT_SHUTDOWN', 'COLD_SHUTDOWN', 'STOPPED'],
  RUNNING: ['WARM_SHUTDOWN', 'SOFT_SHUTDOWN', 'COLD_SHUTDOWN'],
  WARM_SHUTDOWN: ['SOFT_SHUTDOWN', 'COLD_SHUTDOWN', 'STOPPED'],
  SOFT_SHUTDOWN: ['COLD_SHUTDOWN', 'STOPPED'],
  COLD_SHUTDOWN: ['STOPPED'],
  STOPPED: [],
}

/** Whether a worker in `from` may move to `to`: the shutdown phases only go forward. */
export function canMove(from: WorkerState, to: WorkerState): boolean {
  return TRANSITIONS[from].includes(to)
}
