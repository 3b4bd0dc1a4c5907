// Celery's task_annotations (celery/app/annotations.py): a map of task name
// (or '*') to task attributes, or a list of such maps. For one task, the first
// map naming it gives its attributes, then the first map with '*' is applied
// over them, as resolve_all yields them in that order.

/** The task attributes an annotation may set, by Celery's name, and tsq's option for each. */
const ATTRIBUTES: Record<string, string> = {
  rate_limit: 'rateLimit',
  // tsq's own: 'worker' or 'cluster' (docs/rate-limits.md).
  rate_limit_scope: 'rateLimitScope',
  time_limit: 'timeLimit',
  soft_time_limit: 'softTimeLimit',
  acks_late: 'acksLate',
  ignore_result: 'ignoreResult',
  track_started: 'trackStarted',
  max_retries: 'maxRetries',
  default_retry_delay: 'defaultRetryDelay',
  reject_on_worker_lost: 'rejectOnWorkerLost',
  acks_on_failure_or_timeout: 'acksOnFailureOrTimeout',
}

function maps(annotations: unknown): Array<Record<string, unknown>> {
  if (annotations === undefined || annotations === null) return []
  const list = Array.isArray(annotations) ? annotations : [annotations]
  return list.filter((m): m is Record<string, unknown> => !!m && typeof m === 'object' && !Array.isArray(m))
}

function attrs(value: unknown): Record<string, unknown> | undefined {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
}

/** The task options the annotations give `taskName` (empty when none). */
export function annotationsFor(annotations: unknown, taskName: string): Record<string, unknown> {
  const all = maps(annotations)
  const exact = all.map((m) => attrs(m[taskName])).find(Boolean)
  const any = all.map((m) => attrs(m['*'])).find(Boolean)
  const out: Record<string, unknown> = {}
  for (const source of [exact, any]) {
    for (const [key, value] of Object.entries(source ?? {})) {
      const option = ATTRIBUTES[key]
      if (option) out[option] = value
    }
  }
  return out
}

/** Why an annotations setting cannot be honoured, one line each (a Python class path, an '@' around-hook, an attribute tsq has no option for). */
export function annotationRefusals(annotations: unknown): string[] {
  if (annotations === undefined || annotations === null) return []
  const list = Array.isArray(annotations) ? annotations : [annotations]
  const lines: string[] = []
  for (const m of list) {
    if (!m || typeof m !== 'object' || Array.isArray(m)) {
      lines.push(`task_annotations: ${JSON.stringify(m)} is not a map of task name to attributes (a Python class cannot be used here)`)
      continue
    }
    for (const [task, value] of Object.entries(m as Record<string, unknown>)) {
      const a = attrs(value)
      if (!a) {
        lines.push(`task_annotations[${JSON.stringify(task)}]: expected a map of attribute to value`)
        continue
      }
      for (const key of Object.keys(a)) {
        if (!ATTRIBUTES[key])
          lines.push(`task_annotations[${JSON.stringify(task)}].${key}: tsq annotates ${Object.keys(ATTRIBUTES).join(', ')} only`)
      }
    }
  }
  return lines
}
