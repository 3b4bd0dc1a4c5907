// The span a send is made under when the application's context manager says
// none: the running task's run span (in a pool slot, for a task sent from a
// task), or the run span a slot handed back with its outcome (in the worker,
// for callbacks, a chain's next step, a retry). tsq's own AsyncLocalStorage,
// so this holds whether or not the application registered a context manager.
import { AsyncLocalStorage } from 'node:async_hooks'
import type * as Api from '@opentelemetry/api'
import type { OtelApi, Tracing } from './setup.js'
import { activeTracing } from './setup.js'
import { extractContext } from './propagate.js'

/** Mutable: a scope is emptied when its work ends, so what it started later does not inherit it. */
interface Scope {
  ctx: Api.Context | undefined
}

const storage = new AsyncLocalStorage<Scope>()

/** Runs `fn` with `ctx` as the parent of its sends, and as the active context when the application has a context manager. */
export function runInContext<T>(api: OtelApi, ctx: Api.Context, fn: () => T): T {
  const scope: Scope = { ctx }
  return storage.run(scope, () => api.context.with(ctx, fn))
}

/** The context a send's span is made in: the active one when it holds a span, else the scope's. */
export function parentContext(t: Tracing): Api.Context {
  const active = t.api.context.active()
  if (t.api.trace.getSpan(active)) return active
  return storage.getStore()?.ctx ?? active
}

/**
 * Runs `fn` with the trace context `carrier` holds (a slot's run span, handed
 * back with its outcome) as the parent of the sends it makes; without tracing
 * or a carrier it only runs `fn`. The scope ends with `fn`'s promise.
 */
export function withCarriedContext<T>(carrier: Record<string, string> | undefined, fn: () => T): T {
  const t = carrier ? activeTracing() : undefined
  if (!t) return fn()
  const scope: Scope = { ctx: extractContext(t.api, carrier) }
  const out = storage.run(scope, fn)
  if (out instanceof Promise) {
    const clear = () => {
      scope.ctx = undefined
    }
    out.then(clear, clear)
  } else scope.ctx = undefined
  return out
}
