// The context a send's span is made in. With the application's context manager
// (the Node SDK registers one), the active context: the running task's run
// span, or a span the task opened itself. Without one, tsq keeps the run span
// in an AsyncLocalStorage of its own, so a task's sends stay in its trace all
// the same. The worker's follow-ups (callbacks, a chain's next step, a retry)
// are sent in the context a pool slot handed back with the outcome.
import { AsyncLocalStorage } from 'node:async_hooks'
import type * as Api from '@opentelemetry/api'
import type { OtelApi, Tracing } from './setup.js'
import { activeTracing } from './setup.js'
import { extractContext } from './propagate.js'

/** Mutable: a follow-up scope is emptied when its work ends, so what it started later does not inherit it. */
interface Scope {
  ctx: Api.Context | undefined
}

// One store per process, even with two copies of this module loaded (the bundled
// CLI's, which runs the task, and the one a task module imports as 'tsq', which sends).
const STORE_KEY = Symbol.for('tsq.tracingScope')
const holder = globalThis as unknown as Record<symbol, AsyncLocalStorage<Scope> | undefined>
const storage = (holder[STORE_KEY] ??= new AsyncLocalStorage<Scope>())
let probeKey: symbol | undefined

/** Whether the application registered a context manager: a context entered with `with` is then the active one. */
function hasContextManager(api: OtelApi): boolean {
  probeKey ??= api.createContextKey('tsq context manager probe')
  const probe = api.ROOT_CONTEXT.setValue(probeKey, true)
  return api.context.with(probe, () => api.context.active() === probe)
}

/** Runs `fn` (a task) in `ctx`: the application's active context, or tsq's own where it has no context manager. */
export function runInContext<T>(api: OtelApi, ctx: Api.Context, fn: () => T): T {
  if (hasContextManager(api)) return api.context.with(ctx, fn)
  return storage.run({ ctx }, fn)
}

/** The context a send's span is made in. */
export function parentContext(t: Tracing): Api.Context {
  if (hasContextManager(t.api)) return t.api.context.active()
  return storage.getStore()?.ctx ?? t.api.ROOT_CONTEXT
}

/**
 * Runs `fn` with the trace context `carrier` holds (a slot's run span, handed
 * back with its outcome) as the parent of the sends it makes; without tracing
 * or a carrier it only runs `fn`.
 */
export function withCarriedContext<T>(carrier: Record<string, string> | undefined, fn: () => T): T {
  const t = carrier ? activeTracing() : undefined
  if (!t) return fn()
  const ctx = extractContext(t.api, carrier)
  if (hasContextManager(t.api)) return t.api.context.with(ctx, fn)
  const scope: Scope = { ctx }
  const out = storage.run(scope, fn)
  const clear = () => {
    scope.ctx = undefined
  }
  if (out instanceof Promise) out.then(clear, clear)
  else clear()
  return out
}
