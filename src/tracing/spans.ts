// The spans opentelemetry-instrumentation-celery makes, made here through the
// API: `apply_async/<task>` (PRODUCER) around a publish, with the trace context
// written into the message's headers inside it; `run/<task>` (CONSUMER) around a
// run, the child of the sender's span, or linked to it (use_span_links).
import type * as Api from '@opentelemetry/api'
import {
  SENT_AT,
  TRACE_ATTR,
  consumerAttributes,
  consumerSpanName,
  producerAttributes,
  producerSpanName,
  queueWaitSeconds,
  sentAtNow,
  type RunRequest,
} from '../protocol/index.js'
import { activeTracing, type Tracing } from './setup.js'
import { extractContext, injectContext } from './propagate.js'
import { parentContext, runInContext } from './scope.js'

// The API's enum values (SpanKind, SpanStatusCode), fixed by the specification.
const PRODUCER = 3
const CONSUMER = 4
const STATUS_ERROR = 2

/** A send's span: ended when the publish is confirmed, or failed. */
export interface SendSpan {
  end(error?: unknown): void
}

/**
 * Starts `apply_async/<task>` under the current context (the running task's,
 * in a task) and writes its trace context, and the send time, into `headers`;
 * undefined when this process does not trace.
 */
export function startSendSpan(send: {
  taskId: string
  taskName: string
  exchange: string
  routingKey: string
  exchangeType?: string
  headers: Record<string, unknown>
}): SendSpan | undefined {
  const t = activeTracing()
  if (!t) return undefined
  const parent = parentContext(t)
  const span = t.tracer.startSpan(
    producerSpanName(send.taskName),
    { kind: PRODUCER as Api.SpanKind, attributes: producerAttributes(send) },
    parent,
  )
  injectContext(t.api, t.api.trace.setSpan(parent, span), send.headers)
  send.headers[SENT_AT] = sentAtNow(Date.now())
  return {
    end(error?: unknown) {
      if (error !== undefined) {
        const e = error as { message?: unknown }
        span.setStatus({ code: STATUS_ERROR as Api.SpanStatusCode, message: String(e?.message ?? error) })
      }
      span.end()
    },
  }
}

/** How a run ended, for its span: Celery's postrun state and what it ended with. */
export interface RunEnding {
  state: string
  /** A failure's exception (its Python type name and message). */
  error?: { type: string; message: string; stack?: string | null }
  /** A retry's reason. */
  retryReason?: string
  runtimeS: number
}

/** A run's span, open while the task runs. */
export interface RunSpan {
  /** Runs `fn` (the task) with the run span as the current context. */
  within<T>(fn: () => T): T
  /** Ends the span with the run's state and attributes; the trace context to hand back for the worker's follow-ups. */
  end(ending: RunEnding): Record<string, string>
}

/**
 * Starts `run/<task>` for a run whose message carried `headers`: the child of
 * the sender's span, or (use_span_links) the root of a trace of its own that
 * links to it; with the queue wait as an attribute and a histogram.
 */
export function startRunSpan(run: RunRequest & { headers?: Record<string, unknown> }): RunSpan | undefined {
  const t = activeTracing()
  if (!t) return undefined
  const startedMs = Date.now()
  const incoming = extractContext(t.api, run.headers)
  let span: Api.Span
  let ctx: Api.Context
  const name = consumerSpanName(run.taskName)
  if (t.links) {
    const linked = t.api.trace.getSpanContext(incoming)
    const links = linked && t.api.isSpanContextValid(linked) ? [{ context: linked }] : undefined
    span = t.tracer.startSpan(name, { kind: CONSUMER as Api.SpanKind, links }, t.api.ROOT_CONTEXT)
    ctx = t.api.trace.setSpan(t.api.ROOT_CONTEXT, span)
  } else {
    span = t.tracer.startSpan(name, { kind: CONSUMER as Api.SpanKind }, incoming)
    ctx = t.api.trace.setSpan(incoming, span)
  }
  const wait = queueWaitSeconds(run.headers?.[SENT_AT], run.eta, startedMs)
  const labels = { task: run.taskName, worker: run.hostname }
  if (wait !== null) {
    span.setAttribute(TRACE_ATTR.queueWait, wait)
    histograms(t).queueWait.record(wait, labels)
  }
  return {
    within: (fn) => runInContext(t.api, ctx, fn),
    end(ending) {
      if (span.isRecording()) {
        span.setAttributes(consumerAttributes(run, ending.state))
        if (ending.retryReason !== undefined) span.setAttribute(TRACE_ATTR.retryReason, ending.retryReason)
        if (ending.error) {
          span.recordException({ name: ending.error.type, message: ending.error.message, stack: ending.error.stack ?? undefined })
          span.setStatus({ code: STATUS_ERROR as Api.SpanStatusCode, message: ending.error.message })
        }
      }
      span.end()
      histograms(t).runtime.record(ending.runtimeS, labels)
      const carrier: Record<string, unknown> = {}
      injectContext(t.api, ctx, carrier)
      return carrier as Record<string, string>
    },
  }
}

interface Histograms {
  queueWait: Api.Histogram
  runtime: Api.Histogram
}
const made = new WeakMap<Tracing, Histograms>()

/** The queue wait, and Python's runtime histogram by its name, made once per tracer setup. */
function histograms(t: Tracing): Histograms {
  let h = made.get(t)
  if (!h) {
    const meter = t.meter()
    h = {
      queueWait: meter.createHistogram(TRACE_ATTR.queueWait, {
        unit: 's',
        description: 'Time from a task being sent (or its ETA, when later) to its run starting.',
      }),
      runtime: meter.createHistogram('flower.task.runtime.seconds', { unit: 'seconds', description: 'The time it took to run the task.' }),
    }
    made.set(t, h)
  }
  return h
}
