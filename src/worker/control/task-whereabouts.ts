// Where this worker holds a task, for query_task: Celery's two answers
// (active, reserved), and inside the request's info what tells a client why a
// reserved task waits: `eta` (held for its ETA) or `rate_limit` (due, but its
// task's rate limit has no token yet). Python's clients read the same
// [state, info] pair; the extra keys are ones they do not look for.
import type { Request } from '../task-path/request.js'
import type { TaskRunner } from '../task-path/task-runner.js'

export type HeldAs =
  | { state: 'active'; request: Request }
  | { state: 'reserved'; request: Request; eta?: string; rateLimit?: { rate: string | number | null; waitS: number } }

export function whereHeld(runner: TaskRunner, id: string): HeldAs | undefined {
  const active = runner.active.get(id)
  if (active) return { state: 'active', request: active }
  const scheduled = runner.scheduled.get(id)?.request
  if (scheduled)
    return scheduled.message.eta
      ? { state: 'reserved', request: scheduled, eta: scheduled.message.eta }
      : { state: 'reserved', request: scheduled }
  const waiting = runner.waiting.find((r) => r.id === id)
  if (waiting) {
    // Waiting, not staged: a staged request already took its token.
    const limit = runner.rateLimits.get(waiting.name)
    const waitS = limit?.bucket?.peek() ?? 0
    return waitS > 0
      ? { state: 'reserved', request: waiting, rateLimit: { rate: limit!.rate, waitS } }
      : { state: 'reserved', request: waiting }
  }
  const staged = runner.reserved.find((r) => r.id === id)
  return staged ? { state: 'reserved', request: staged } : undefined
}

/** query_task's entry for one id: Celery's [state, info], with `eta` or `rate_limit` added where they say why it waits. */
export function queryTaskEntry(
  runner: TaskRunner,
  id: string,
  etaIso: (eta: string) => string | null,
): [string, Record<string, unknown>] | undefined {
  const held = whereHeld(runner, id)
  if (!held) return undefined
  const info = held.request.info()
  if (held.state === 'active') return ['active', info]
  if (held.eta) return ['reserved', { ...info, eta: etaIso(held.eta) }]
  if (held.rateLimit) return ['reserved', { ...info, rate_limit: { rate: held.rateLimit.rate, wait: held.rateLimit.waitS } }]
  return ['reserved', info]
}
