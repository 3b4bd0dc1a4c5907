// Signals become intents through one pure function, so the escalation rules
// are a table (tested as one) rather than scattered handlers.
import type { WorkerState } from './worker.js'

export type Intent = 'warm' | 'soft' | 'cold' | 'cancel-tasks' | 'hard' | 'restart' | 'dump' | 'debugger' | 'ignore'

export interface SignalContext {
  remapSigterm: boolean
  /** worker_soft_shutdown_timeout > 0. */
  softEnabled: boolean
}

export function intentFor(signal: NodeJS.Signals, state: WorkerState, ctx: SignalContext): Intent {
  const stopping = state === 'WARM_SHUTDOWN' || state === 'SOFT_SHUTDOWN' || state === 'COLD_SHUTDOWN'
  switch (signal) {
    case 'SIGTERM':
      if (ctx.remapSigterm) return intentFor('SIGQUIT', state, ctx)
      // Extra TERMs during a shutdown are ignored; only INT moves on.
      return stopping ? 'ignore' : 'warm'
    case 'SIGINT':
      if (state === 'COLD_SHUTDOWN') return 'hard'
      if (state === 'SOFT_SHUTDOWN') return 'cold'
      if (state === 'WARM_SHUTDOWN') return ctx.softEnabled ? 'soft' : 'cold'
      return 'warm'
    case 'SIGQUIT':
      if (state === 'COLD_SHUTDOWN') return 'ignore'
      // QUIT during soft cancels the tasks but the soft window still runs out.
      if (state === 'SOFT_SHUTDOWN') return 'cancel-tasks'
      return ctx.softEnabled ? 'soft' : 'cold'
    case 'SIGHUP':
      return stopping ? 'ignore' : 'restart'
    case 'SIGUSR1':
      return 'dump'
    case 'SIGUSR2':
      return 'debugger'
    default:
      return 'ignore'
  }
}

/** What the console says after each phase starts: what the next Ctrl-C will do. */
export function nextCtrlCHint(intent: Intent, ctx: SignalContext): string {
  switch (intent) {
    case 'warm':
      return ctx.softEnabled
        ? 'worker: Hitting Ctrl+C again will initiate soft shutdown, allowing running tasks to finish within the time limit!'
        : 'worker: Hitting Ctrl+C again will initiate cold shutdown, terminating all running tasks!'
    case 'soft':
      return 'worker: Hitting Ctrl+C again will initiate cold shutdown, terminating all running tasks!'
    case 'cold':
      return 'worker: Hitting Ctrl+C again will terminate the worker immediately (hard shutdown)!'
    default:
      return ''
  }
}
