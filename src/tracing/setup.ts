// Whether tsq traces, and with what: @opentelemetry/api, an optional peer
// dependency, required on first use (synchronously: a send's path up to its
// publish has no await). Absent, or switched off, tracing is one check per
// send and run. On by default once the application registers a tracer
// provider (its SDK), as the API's own instrumentations are; configureTracing()
// or TSQ_TRACING=on|off|auto says otherwise.
import { createRequire } from 'node:module'
import type * as Api from '@opentelemetry/api'
import { isPackageNotFound } from '../protocol/index.js'

export type OtelApi = typeof Api

export const API_PACKAGE = '@opentelemetry/api'

/** What configureTracing() takes: Python's CeleryInstrumentor().instrument() keyword arguments, and the switch. */
export interface TracingOptions {
  /** true: on; false: off; 'auto' (the default): on once a global tracer provider is registered. */
  enabled?: boolean | 'auto'
  /** A run span links to the sender's span instead of being its child (the messaging conventions' way). */
  use_span_links?: boolean
  /** The provider to take tsq's tracer from, instead of the global one (turns tracing on). */
  tracerProvider?: { getTracer(name: string, version?: string, options?: { schemaUrl?: string }): unknown }
  /** The provider of the queue-wait and runtime histograms, instead of the global one. */
  meterProvider?: { getMeter(name: string, version?: string, options?: { schemaUrl?: string }): unknown }
}

/** The instrumentation's name and the schema its attribute names come from (Python's: 1.11.0). */
export const TRACER_NAME = 'tsq'
export const SCHEMA_URL = 'https://opentelemetry.io/schemas/1.11.0'
const TRACER_VERSION = '0.1.0'

export interface Tracing {
  api: OtelApi
  tracer: Api.Tracer
  links: boolean
  /** The queue-wait and runtime histograms, made on first record. */
  meter(): Api.Meter
}

/**
 * The options, one set per process even with two copies of this module loaded
 * (the bundled CLI's, which runs tasks, and the one a task module imports as
 * 'tsq', which calls configureTracing); `version` tells each copy to look again.
 */
interface Shared {
  options: TracingOptions
  version: number
}
const SHARED_KEY = Symbol.for('tsq.tracingOptions')
const holder = globalThis as unknown as Record<symbol, Shared | undefined>
const shared = (holder[SHARED_KEY] ??= { options: {}, version: 0 })

let api: OtelApi | null | undefined
/** The shared version this copy's cache was made for. */
let seen = -1
let on: Tracing | undefined
/** Off for good: the API is absent, or tracing was switched off. */
let off = false

/** The API, required once; null when the package is not installed. */
export function loadApi(): OtelApi | null {
  if (api !== undefined) return api
  try {
    api = createRequire(import.meta.url)(API_PACKAGE) as OtelApi
  } catch (error) {
    if (!isPackageNotFound(error, API_PACKAGE)) throw error
    api = null
  }
  return api
}

/** TSQ_TRACING, read once: a send reads the switch, not the environment. */
let envSwitchValue: boolean | 'auto' | undefined
function envSwitch(): boolean | 'auto' {
  return (envSwitchValue ??= readEnvSwitch())
}

function readEnvSwitch(): boolean | 'auto' {
  const raw = (process.env.TSQ_TRACING ?? '').trim().toLowerCase()
  if (['1', 'on', 'true', 'yes'].includes(raw)) return true
  if (['0', 'off', 'false', 'no'].includes(raw)) return false
  return 'auto'
}

function envLinks(): boolean {
  return ['1', 'on', 'true', 'yes'].includes((process.env.TSQ_TRACING_SPAN_LINKS ?? '').trim().toLowerCase())
}

/**
 * Turns tracing on or off and sets its options, for this process (a task
 * module calls it at its top, so every pool slot that loads the module does too).
 */
export function configureTracing(next: TracingOptions = {}): void {
  shared.options = { ...next }
  shared.version += 1
}

/** Back to the defaults (for tests). */
export function resetTracing(): void {
  configureTracing({})
}

/**
 * The tracer, when this process traces; undefined otherwise. Called on every
 * send and run: off, it is a check; on 'auto' before a provider is registered,
 * a look at the global provider.
 */
export function activeTracing(): Tracing | undefined {
  if (seen !== shared.version) {
    seen = shared.version
    on = undefined
    off = false
    envSwitchValue = undefined
  }
  if (on) return on
  if (off) return undefined
  const options = shared.options
  const a = loadApi()
  const enabled = options.enabled ?? envSwitch()
  if (!a || enabled === false) {
    off = true
    return undefined
  }
  const explicit = options.tracerProvider
  if (!explicit && enabled === 'auto' && !providerRegistered(a)) return undefined
  const provider = (explicit as Api.TracerProvider | undefined) ?? a.trace.getTracerProvider()
  const tracer = provider.getTracer(TRACER_NAME, TRACER_VERSION, { schemaUrl: SCHEMA_URL })
  let meter: Api.Meter | undefined
  on = {
    api: a,
    tracer,
    links: options.use_span_links ?? envLinks(),
    meter: () =>
      (meter ??= ((options.meterProvider as Api.MeterProvider | undefined) ?? a.metrics.getMeterProvider()).getMeter(
        TRACER_NAME,
        TRACER_VERSION,
        { schemaUrl: SCHEMA_URL },
      )),
  }
  return on
}

/**
 * Whether the application registered a tracer provider: the global one is the
 * API's proxy, whose delegate is unset until then (getDelegateTracer answers
 * undefined without making anything).
 */
function providerRegistered(a: OtelApi): boolean {
  const provider = a.trace.getTracerProvider() as Api.TracerProvider & { getDelegateTracer?: (name: string) => unknown }
  if (typeof provider.getDelegateTracer !== 'function') return true
  return provider.getDelegateTracer(TRACER_NAME) !== undefined
}
