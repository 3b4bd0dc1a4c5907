// Writing and reading the trace context of a task message. The application's
// global propagator when it registered one (the Node SDK registers W3C trace
// context and baggage, Python's defaults); else the same two, written here,
// so a provider set up without a propagator still joins Python's traces.
import type * as Api from '@opentelemetry/api'
import { BAGGAGE, TRACEPARENT, TRACESTATE, formatBaggage, formatTraceparent, parseBaggage, parseTraceparent } from '../protocol/index.js'
import type { OtelApi } from './setup.js'

/** The global propagator writes something: the application registered one. */
function hasGlobalPropagator(api: OtelApi): boolean {
  return api.propagation.fields().length > 0
}

const SETTER: Api.TextMapSetter<Record<string, unknown>> = {
  set: (carrier, key, value) => {
    carrier[key] = value
  },
}

const GETTER: Api.TextMapGetter<Record<string, unknown>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => {
    const value = carrier[key]
    if (value === undefined || value === null) return undefined
    if (typeof value === 'string') return value
    // As Python's CeleryGetter: a header that is not text is read as its text.
    return Array.isArray(value) ? value.map(String) : String(value)
  },
}

/** Writes `ctx`'s trace context into a message's headers, replacing any a resent message carried. */
export function injectContext(api: OtelApi, ctx: Api.Context, headers: Record<string, unknown>): void {
  delete headers[TRACEPARENT]
  delete headers[TRACESTATE]
  delete headers[BAGGAGE]
  if (hasGlobalPropagator(api)) {
    api.propagation.inject(ctx, headers, SETTER)
    return
  }
  const sc = api.trace.getSpanContext(ctx)
  if (sc && api.isSpanContextValid(sc)) {
    headers[TRACEPARENT] = formatTraceparent(sc)
    const state = sc.traceState?.serialize()
    if (state) headers[TRACESTATE] = state
  }
  const bag = api.propagation.getBaggage(ctx)
  const baggage = bag && formatBaggage(bag.getAllEntries().map(([key, e]) => ({ key, value: e.value, metadata: e.metadata?.toString() })))
  if (baggage) headers[BAGGAGE] = baggage
}

/** The trace context a message's headers carry, over `base` (the root context, unless given). */
export function extractContext(api: OtelApi, headers: Record<string, unknown> | undefined, base?: Api.Context): Api.Context {
  const root = base ?? api.ROOT_CONTEXT
  if (!headers) return root
  if (hasGlobalPropagator(api)) return api.propagation.extract(root, headers, GETTER)
  let ctx = root
  const tp = parseTraceparent(headers[TRACEPARENT])
  if (tp) {
    const state = headers[TRACESTATE]
    const sc: Api.SpanContext = { traceId: tp.traceId, spanId: tp.spanId, traceFlags: tp.traceFlags, isRemote: true }
    if (typeof state === 'string' && state) sc.traceState = api.createTraceState(state)
    ctx = api.trace.setSpanContext(ctx, sc)
  }
  const items = parseBaggage(headers[BAGGAGE])
  if (items.length > 0) {
    const entries: Record<string, Api.BaggageEntry> = {}
    for (const i of items)
      entries[i.key] = i.metadata ? { value: i.value, metadata: api.baggageEntryMetadataFromString(i.metadata) } : { value: i.value }
    ctx = api.propagation.setBaggage(ctx, api.propagation.createBaggage(entries))
  }
  return ctx
}
