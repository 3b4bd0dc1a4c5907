// Celery's task signals (celery.signals.task_prerun, task_postrun,
// task_success, task_failure, task_retry): hooks a task module registers with
// `app.on(...)` to run around every task, for what cuts across tasks: metrics,
// log context, a connection checked out per task. They run where the task
// runs (the pool slot, as Celery's run in the pool process), synchronously,
// and a receiver that throws is logged, never failing the task, as Celery's
// Signal.send does.

export interface TaskSignalPayloads {
  /** Before the task's function is called. */
  task_prerun: { sender: string; taskId: string; args: unknown[]; kwargs: Record<string, unknown> }
  /** After the run, whatever its outcome; `state` is SUCCESS, FAILURE, RETRY, IGNORED or REJECTED. */
  task_postrun: { sender: string; taskId: string; args: unknown[]; kwargs: Record<string, unknown>; retval: unknown; state: string }
  task_success: { sender: string; taskId: string; result: unknown }
  task_failure: { sender: string; taskId: string; exception: unknown; args: unknown[]; kwargs: Record<string, unknown>; traceback: string | null }
  /** The task asked to run again (retry(), or autoretryFor); `reason` is the error, if one was given. */
  task_retry: { sender: string; taskId: string; retries: number; reason: unknown }
}

export type TaskSignalName = keyof TaskSignalPayloads
export type TaskSignalReceiver<K extends TaskSignalName> = (payload: TaskSignalPayloads[K]) => unknown

export const TASK_SIGNALS: readonly TaskSignalName[] = ['task_prerun', 'task_postrun', 'task_success', 'task_failure', 'task_retry']

export class TaskSignals {
  private readonly receivers = new Map<TaskSignalName, Array<TaskSignalReceiver<any>>>()
  /** Read on every task: the common case, no receiver at all, costs one check. */
  any = false

  connect<K extends TaskSignalName>(name: K, receiver: TaskSignalReceiver<K>): () => void {
    if (!TASK_SIGNALS.includes(name)) throw new TypeError(`unknown signal ${JSON.stringify(name)} (one of ${TASK_SIGNALS.join(', ')})`)
    if (typeof receiver !== 'function') throw new TypeError(`app.on('${name}', receiver): receiver must be a function`)
    const list = this.receivers.get(name) ?? []
    list.push(receiver)
    this.receivers.set(name, list)
    this.any = true
    return () => {
      const at = list.indexOf(receiver)
      if (at !== -1) list.splice(at, 1)
      this.any = [...this.receivers.values()].some((l) => l.length > 0)
    }
  }

  send<K extends TaskSignalName>(name: K, payload: TaskSignalPayloads[K]): void {
    const list = this.receivers.get(name)
    if (!list) return
    for (const receiver of [...list]) runReceiver(name, receiver, payload)
  }
}

/**
 * Calls a signal receiver or a task's handler; what it throws (or its promise
 * rejects with) is reported and goes no further, as Celery logs "Signal
 * handler %r raised: %r" and carries on.
 */
export function runReceiver<T>(hook: string, receiver: (payload: T) => unknown, payload: T): void {
  const report = (error: unknown): void => {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
    console.error(`Signal handler ${receiver.name || '<anonymous>'} for ${hook} raised: ${message}`)
  }
  try {
    const returned = receiver(payload)
    if (returned instanceof Promise) returned.catch(report)
  } catch (error) {
    report(error)
  }
}
