// Celery's signals (celery.signals): hooks a task module registers with
// `app.on(...)`, for what cuts across tasks: metrics, log context, a
// connection per process, a readiness file. The task signals run where the
// task runs (the pool slot, as Celery's run in the pool process); the worker
// signals and the task_received/revoked/unknown/rejected ones run in the
// worker's main process, which loads the module too; worker_process_init and
// worker_process_shutdown in each pool slot. Receivers run synchronously, and
// one that throws is logged, never failing the task, as Celery's Signal.send.
import type { PublishSignalPayloads } from '../client/index.js'

/** A request as the worker holds it: Celery's Request.info() fields. */
export type RequestInfo = Record<string, unknown>

export interface SignalPayloads {
  /** Before the task's function is called. */
  task_prerun: { sender: string; taskId: string; args: unknown[]; kwargs: Record<string, unknown>; headers: Record<string, unknown> }
  /** After the run, whatever its outcome; `state` is SUCCESS, FAILURE, RETRY, IGNORED or REJECTED. */
  task_postrun: { sender: string; taskId: string; args: unknown[]; kwargs: Record<string, unknown>; retval: unknown; state: string }
  task_success: { sender: string; taskId: string; result: unknown }
  task_failure: {
    sender: string
    taskId: string
    exception: unknown
    args: unknown[]
    kwargs: Record<string, unknown>
    traceback: string | null
  }
  /** The task asked to run again (retry(), or autoretryFor); `reason` is the error, if one was given. */
  task_retry: { sender: string; taskId: string; retries: number; reason: unknown }
  /**
   * An error raised outside the task's body, where Celery's trace sends this
   * signal: a task handler (onSuccess, onFailure, onRetry, afterReturn) threw,
   * in the process that ran the task; or the worker could not store the
   * task's result, in the worker's main process. `request` is the task's
   * context (currentTask()) where the task ran, and the request as
   * `inspect active` shows it in the worker's main process. The task's
   * outcome stands.
   */
  task_internal_error: {
    sender: string
    taskId: string
    args: unknown[]
    kwargs: Record<string, unknown>
    request: unknown
    exception: unknown
    traceback: string | null
  }
  /** A task message was accepted: not revoked, not expired, its task known. */
  task_received: { sender: string; request: RequestInfo }
  task_revoked: { sender: string; request: RequestInfo; terminated: boolean; signum: number | null; expired: boolean }
  /** A message for a task this worker does not have. */
  task_unknown: { sender: string; name: string; id: string; message: { headers: unknown; body: Buffer }; exc: Error }
  /** A message that could not be read as a task, rejected. */
  task_rejected: { sender: string; message: { headers: unknown; body: Buffer }; exc: Error }
  /**
   * The worker's first signal, in its main process, before anything starts:
   * `options` are the worker's settings from its flags (Celery's celeryd_init,
   * for configuring a worker by its name).
   */
  celeryd_init: {
    sender: string
    conf: Record<string, unknown>
    options: { hostname: string; concurrency: number; pool: string; queues: string[]; loglevel: string }
  }
  /** The worker is set up, nothing started yet. */
  worker_init: { sender: string }
  /**
   * The worker is about to set up its logging, after worker_init (Celery's
   * setup_logging; `sender` is null, as Celery's). Connecting a receiver says
   * the app sets up logging itself: the worker then leaves the console alone
   * (no worker_redirect_stdouts, in the worker or its pool), as Celery then
   * leaves its logging config alone. `loglevel` is Python's number for -l
   * (INFO is 20); `format` is the worker's log line; tsq never colours it.
   */
  setup_logging: { sender: null; loglevel: number; logfile: string | null; format: string; colorize: boolean }
  /**
   * After -Q was applied, before the banner and before consuming: a queue
   * pushed onto `queues` is consumed too (Celery's documented use, a queue
   * per worker: `instance.app.amqp.queues.select_add(name)`).
   */
  celeryd_after_setup: { sender: string; conf: Record<string, unknown>; queues: string[] }
  /** Each worker-online, worker-heartbeat and worker-offline event the worker sends. */
  heartbeat_sent: { sender: string }
  /** The worker consumes: it logged "ready.". */
  worker_ready: { sender: string }
  /** A shutdown began or escalated; `sig` is the signal that asked for it, if one did. */
  worker_shutting_down: { sender: string; sig: string | null; how: 'Warm' | 'Soft' | 'Cold' }
  /** The worker is about to stop its pool and close its connections. */
  worker_shutdown: { sender: string }
  /** A pool slot loaded the module and is about to take tasks. */
  worker_process_init: { sender: string; pid: number; index: number }
  /** A pool slot is about to exit. */
  worker_process_shutdown: { sender: string; pid: number; index: number }
  /**
   * A task message is about to be published (from a client, beat, or a
   * worker's retries, links and chain steps): `headers` may be changed and the
   * message goes out with the change, as Celery's headers dict does. `body` is
   * [args, kwargs, embed], for reading.
   */
  before_task_publish: PublishSignalPayloads['before_task_publish']
  after_task_publish: PublishSignalPayloads['after_task_publish']
}

export type SignalName = keyof SignalPayloads
export type SignalReceiver<K extends SignalName> = (payload: SignalPayloads[K]) => unknown

export const SIGNAL_NAMES: readonly SignalName[] = [
  'task_prerun',
  'task_postrun',
  'task_success',
  'task_failure',
  'task_retry',
  'task_received',
  'task_revoked',
  'task_unknown',
  'task_rejected',
  'task_internal_error',
  'celeryd_init',
  'worker_init',
  'setup_logging',
  'celeryd_after_setup',
  'heartbeat_sent',
  'worker_ready',
  'worker_shutting_down',
  'worker_shutdown',
  'worker_process_init',
  'worker_process_shutdown',
  'before_task_publish',
  'after_task_publish',
]

/** The signals sent around a task's run, where it runs. */
const RUN_SIGNALS: ReadonlySet<SignalName> = new Set(['task_prerun', 'task_postrun', 'task_success', 'task_failure', 'task_retry'])

export class AppSignals {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- receivers of every signal in one map; connect() types each by its name
  private readonly receivers = new Map<SignalName, Array<SignalReceiver<any>>>()
  /** Read on every task: the common case, no receiver of a run's signals, costs one check. */
  observingRuns = false

  connect<K extends SignalName>(name: K, receiver: SignalReceiver<K>): () => void {
    if (!SIGNAL_NAMES.includes(name)) throw new TypeError(`unknown signal ${JSON.stringify(name)} (one of ${SIGNAL_NAMES.join(', ')})`)
    if (typeof receiver !== 'function') throw new TypeError(`app.on('${name}', receiver): receiver must be a function`)
    const list = this.receivers.get(name) ?? []
    list.push(receiver)
    this.receivers.set(name, list)
    this.observingRuns ||= RUN_SIGNALS.has(name)
    return () => {
      const at = list.indexOf(receiver)
      if (at !== -1) list.splice(at, 1)
      this.observingRuns = [...RUN_SIGNALS].some((n) => (this.receivers.get(n)?.length ?? 0) > 0)
    }
  }

  /** Whether anything listens, so a payload costing work is built only then. */
  has(name: SignalName): boolean {
    return (this.receivers.get(name)?.length ?? 0) > 0
  }

  send<K extends SignalName>(name: K, payload: SignalPayloads[K]): void {
    const list = this.receivers.get(name)
    if (!list || list.length === 0) return
    for (const receiver of [...list]) runReceiver(name, receiver, payload)
  }

  /**
   * send(), then waits for the promises async receivers return, at most
   * `limitMs`; resolves false when the limit cut the wait short. For the
   * signals at a process's start and end: an `await db.connect()` in
   * worker_process_init finishes before the slot takes a task, a flush in
   * worker_shutdown before the connections close.
   */
  async sendAndWait<K extends SignalName>(name: K, payload: SignalPayloads[K], limitMs: number): Promise<boolean> {
    const list = this.receivers.get(name)
    if (!list || list.length === 0) return true
    const pending = [...list].map((receiver) => runReceiver(name, receiver, payload)).filter((p): p is Promise<void> => p !== undefined)
    if (pending.length === 0) return true
    let timer: NodeJS.Timeout | undefined
    const limit = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), limitMs)
    })
    try {
      return await Promise.race([Promise.all(pending).then(() => true as const), limit])
    } finally {
      clearTimeout(timer)
    }
  }
}

/**
 * worker_process_init in a process about to take tasks (a pool slot, or the
 * solo pool's worker), waiting for async receivers at most Celery's
 * worker_proc_alive_timeout (4 s); past it, `warn` says so and tasks start.
 */
export async function announceProcessInit(
  signals: AppSignals,
  conf: Record<string, unknown> | undefined,
  payload: SignalPayloads['worker_process_init'],
  warn: (message: string) => void,
): Promise<void> {
  const seconds = Number(conf?.worker_proc_alive_timeout ?? 4)
  const limitMs = Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 4000
  if (await signals.sendAndWait('worker_process_init', payload, limitMs)) return
  warn(`worker_process_init receivers still running after ${limitMs / 1000} s (worker_proc_alive_timeout); taking tasks`)
}

/**
 * Calls a signal receiver or a task's handler; what it throws (or its promise
 * rejects with) is reported and goes no further, as Celery logs "Signal
 * handler %r raised: %r" and carries on.
 */
export function runReceiver<T>(hook: string, receiver: (payload: T) => unknown, payload: T): Promise<void> | undefined {
  const report = (error: unknown): void => {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
    console.error(`Signal handler ${receiver.name || '<anonymous>'} for ${hook} raised: ${message}`)
  }
  try {
    const returned = receiver(payload)
    // Handed back settled either way, for a caller that waits for it (sendAndWait).
    if (returned instanceof Promise) return returned.then(() => undefined, report)
  } catch (error) {
    report(error)
  }
  return undefined
}
