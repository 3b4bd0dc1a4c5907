// A run inside its `run/<task>` span (src/tracing/, docs/tracing.md), where the
// task runs: the span is current while the task's code runs, so what it sends
// is in the same trace, and the span's context goes back with the outcome for
// the worker's follow-ups (callbacks, the chain's next step, a retry's copy).
import { startRunSpan, type RunEnding } from '../../tracing/index.js'
import type { Job, Outcome } from './jobs.js'
import type { RunningJob } from './executor.js'

/** Celery's task_postrun states, by outcome. */
const STATES: Record<Outcome['status'], string> = {
  success: 'SUCCESS',
  failure: 'FAILURE',
  retry: 'RETRY',
  ignored: 'IGNORED',
  rejected: 'REJECTED',
  killed: 'FAILURE',
}

function endingOf(o: Outcome): RunEnding {
  const ending: RunEnding = { state: STATES[o.status], runtimeS: o.runtime }
  if (o.status === 'failure') ending.error = { type: o.exc.type, message: o.exc.message, stack: o.traceback }
  if (o.status === 'retry' && o.exc) ending.retryReason = o.exc.message
  return ending
}

/** Runs `start` (the job's execution) in its span when this process traces; else just runs it. */
export function traceJob(job: Job, start: () => RunningJob): RunningJob {
  const span = startRunSpan({
    id: job.id,
    taskName: job.task,
    hostname: job.hostname,
    origin: job.origin,
    correlationId: (job.properties?.correlation_id as string | undefined) ?? null,
    deliveryInfo: job.deliveryInfo,
    eta: job.eta,
    expires: job.expires,
    replyTo: job.replyTo,
    retries: job.retries,
    headers: job.headers,
  })
  if (!span) return start()
  const running = span.within(start)
  const finish = (o: Outcome): Outcome => {
    o.trace ??= span.end(endingOf(o))
    return o
  }
  if (running.immediate) finish(running.immediate)
  // The pool handles a rejected outcome; this branch only must not add an unhandled one.
  else void running.outcome.then(finish, () => undefined)
  return running
}
