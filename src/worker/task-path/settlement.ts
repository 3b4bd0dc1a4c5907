// Whether a task message is acked, rejected, requeued or retried: one pure
// function of what became of it, the task's options and the worker's, decided
// as Celery 5.2.6 decides it (celery/worker/request.py: on_success, on_retry,
// on_failure, on_timeout, _announce_revoked; celery/worker/consumer/consumer.py:
// on_decode_error, on_invalid_task, on_unknown_task), plus tsq's own cases.
// Every settlement of a task message in the worker goes through it (settler.ts).

/** What became of a task message, as far as its settlement goes. */
export type Fate =
  // Refused on arrival: nothing runs.
  /** Not a task message tsq can read: an unreadable body or header table, an unknown compression (Celery's on_invalid_task). */
  | 'undecodable'
  /** Past worker_message_max_bytes or the decoder's depth limit (tsq's: kept for a dead-letter exchange, never run). */
  | 'over-limit'
  /** A content type outside accept_content (Celery's on_invalid_task). */
  | 'content-disallowed'
  /** A signature that does not verify (Celery's on_decode_error acks it, so it does not loop). */
  | 'signature-invalid'
  /** No task of that name here (Celery's on_unknown_task). */
  | 'unregistered'
  /** A second live copy of a task this worker holds already (tsq's: the broker delivered it twice). */
  | 'duplicate'
  /** A far ETA handed to the broker's delayed delivery, confirmed there (tsq's: the copy in the broker takes its place). */
  | 'delayed-on-broker'
  // Revoked: on arrival, when it would start, expired, or terminated while running.
  /** Celery's _announce_revoked acks, whatever acks_late says. */
  | 'revoked'
  // Starting.
  /** The task starts in its pool slot: Celery's on_accepted acks it unless acks_late (the early ack). */
  | 'started'
  /** The pool could not take the job at all (tsq's: it would fail the same way each time it came back). */
  | 'pool-hand-off-failed'
  // Ended.
  | 'succeeded'
  /** The task raised Ignore (or its run was replaced by another signature). */
  | 'ignored'
  /** The task raised Retry: a new copy with its new ETA is published, then this one settles. */
  | 'retried'
  /** The task raised, ran out of retries, returned what cannot be encoded, or its replacement could not be sent. */
  | 'failed'
  /** The hard time limit killed it. */
  | 'timed-out'
  /** Its pool process died under it (billiard's WorkerLostError). */
  | 'worker-lost'
  /** The task raised Reject(requeue=False). */
  | 'rejected'
  /** The task raised Reject(requeue=True). */
  | 'rejected-requeue'
  // The worker's side.
  /** Its end could not be recorded (tsq's: the store failed outside the task's own errors), so another run may record it. */
  | 'not-recorded'
  /** Handed back at shutdown: held and not started, or running when a cold shutdown cancels it. */
  | 'shutdown'

/**
 * What the worker sends: ack; reject (without requeue: to the queue's
 * dead-letter exchange, if it has one); requeue; retry (publish the new copy,
 * then ack this one); hold (nothing yet: acks_late, settled when it ends).
 */
export type Settlement = 'ack' | 'reject' | 'requeue' | 'retry' | 'hold'

/** The task options that take part (TaskOptions has them; absent means the default below). */
export interface SettlementOptions {
  /** Ack after the task instead of when it starts. Absent: the worker's. */
  acksLate?: boolean
  /** A late-ack failure or time-out: acked (true, Celery's default) or rejected. */
  acksOnFailureOrTimeout?: boolean
  /** A late-ack message whose process died: requeued (true, tsq's default; Celery's is False) or settled as a failure. */
  rejectOnWorkerLost?: boolean
}

/** The worker's part: its acks_late (tsq's default true; --early-ack or task_acks_late = False make it false). */
export interface WorkerSettlementSettings {
  acksLate: boolean
}

/** Every fate, in the order above (the decision table's rows are checked against it). */
export const FATES: readonly Fate[] = [
  'undecodable',
  'over-limit',
  'content-disallowed',
  'signature-invalid',
  'unregistered',
  'duplicate',
  'delayed-on-broker',
  'revoked',
  'started',
  'pool-hand-off-failed',
  'succeeded',
  'ignored',
  'retried',
  'failed',
  'timed-out',
  'worker-lost',
  'rejected',
  'rejected-requeue',
  'not-recorded',
  'shutdown',
]

/**
 * The settlement for a fate. After an early ack the message is gone: Celery's
 * acknowledge() and reject() then do nothing, and so does a Request acked
 * already; where Celery calls neither (a failure), the table says 'ack'.
 */
export function settlementFor(fate: Fate, task: SettlementOptions, worker: WorkerSettlementSettings): Settlement {
  const acksLate = task.acksLate ?? worker.acksLate
  switch (fate) {
    case 'undecodable':
    case 'over-limit':
    case 'content-disallowed':
    case 'unregistered':
    case 'pool-hand-off-failed':
    case 'rejected':
      return 'reject'
    case 'signature-invalid':
    case 'duplicate':
    case 'delayed-on-broker':
    case 'revoked':
    case 'succeeded':
    case 'ignored':
      return 'ack'
    case 'started':
      return acksLate ? 'hold' : 'ack'
    case 'retried':
      return 'retry'
    case 'worker-lost':
      // request.py on_failure: reject(requeue=True) only for a late ack with reject_on_worker_lost; otherwise a failure.
      if (acksLate && (task.rejectOnWorkerLost ?? true)) return 'requeue'
      return afterFailure(acksLate, task)
    case 'failed':
    case 'timed-out':
      return afterFailure(acksLate, task)
    case 'rejected-requeue':
    case 'not-recorded':
    case 'shutdown':
      return 'requeue'
  }
}

/** request.py on_failure/on_timeout: a late ack acks if acks_on_failure_or_timeout, else rejects without requeue. */
function afterFailure(acksLate: boolean, task: SettlementOptions): Settlement {
  if (!acksLate) return 'ack'
  return (task.acksOnFailureOrTimeout ?? true) ? 'ack' : 'reject'
}
