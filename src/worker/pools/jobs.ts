// The messages between a worker and its pool slots. One discriminated union per
// direction, shared by the prefork (IPC) and threads (MessagePort) pools.

import type { TaskRun } from '../../app/task-context.js'

export interface Job extends TaskRun {
  task: string
  /** Seconds; the slot fires the task's AbortSignal when it passes. */
  softTimeLimit: number | null
}

export interface EncodedException {
  type: string
  /** The exception's args as Celery stores them (exc_message). */
  args: unknown[]
  module: string
  message: string
}

export type Outcome = (
  | { status: 'success'; value: unknown; runtime: number }
  | { status: 'failure'; exc: EncodedException; traceback: string | null; runtime: number }
  | { status: 'retry'; countdown: number | null; eta: string | null; maxRetries: number | null; exc: EncodedException | null; runtime: number }
  | { status: 'killed'; reason: 'time-limit' | 'terminated' | 'worker-lost'; signal: string | null; runtime: number }
  /** The task threw Ignore: acked, nothing stored. */
  | { status: 'ignored'; runtime: number }
  /** The task threw Reject: the message is rejected (or requeued), nothing stored. */
  | { status: 'rejected'; requeue: boolean; reason: string | null; runtime: number }
) & {
  /** The slot holds the task's end handlers and signals until the worker calls the pool's afterStored(). */
  endHooks?: true
}

export type ToSlot =
  | { type: 'run'; job: Job }
  | { type: 'abort'; id: string; reason: 'revoked' | 'soft-time-limit' }
  /** The worker stored the task's end state: run the end hooks its outcome held. */
  | { type: 'stored'; id: string }
  | { type: 'exit' }

export type FromSlot =
  | { type: 'ready'; pid: number }
  | { type: 'started'; id: string }
  /** rss: the slot's resident set in bytes after the task (--max-memory-per-child). */
  | { type: 'done'; id: string; outcome: Outcome; rss?: number }
  | { type: 'load-error'; message: string }
  /** The running task called updateState(). */
  | { type: 'state'; id: string; state: string; meta: unknown }
