// OpenTelemetry for tsq, through @opentelemetry/api only (docs/tracing.md):
// what the send path, the run path and the worker's follow-ups call.
export { configureTracing, resetTracing, activeTracing, loadApi, API_PACKAGE, TRACER_NAME } from './setup.js'
export type { TracingOptions, Tracing } from './setup.js'
export { startSendSpan, startRunSpan } from './spans.js'
export type { SendSpan, RunSpan, RunEnding } from './spans.js'
export { withCarriedContext } from './scope.js'
export { injectContext, extractContext } from './propagate.js'
