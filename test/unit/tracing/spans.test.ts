// tsq-test: own-process
// OpenTelemetry through the API with a tracer provider registered (an SDK's
// part, played by an in-memory provider): a send is an apply_async/<task>
// PRODUCER span whose context goes out as the message's traceparent; a run is
// a run/<task> CONSUMER span, the child of the traceparent the message carried
// (as Python's instrumentation writes it) or, with use_span_links, linked to
// it; a task's own sends and the worker's follow-ups stay in the run's trace,
// with no context manager registered as with one; off, nothing is written.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import * as api from '@opentelemetry/api'
import { sendTask } from '../../../src/client/index.js'
import { createApp } from '../../../src/app/index.js'
import { executeJob } from '../../../src/app/execution/executor.js'
import type { Job, Outcome } from '../../../src/app/execution/jobs.js'
import { configureTracing, withCarriedContext } from '../../../src/tracing/index.js'
import type { OutgoingMessage, Transport } from '../../../src/transport/index.js'
import { AlsContextManager, MemoryTracerProvider } from '../../helpers/otel-memory.js'

const provider = new MemoryTracerProvider()
api.trace.setGlobalTracerProvider(provider)

/** A transport that keeps what is published. */
function capturing(): { transport: Transport; sent: OutgoingMessage[] } {
  const sent: OutgoingMessage[] = []
  const noop = async () => ({ queue: '', messageCount: 0, consumerCount: 0 })
  const transport = {
    kind: 'memory',
    publish: async (_exchange: string, _key: string, message: OutgoingMessage) => {
      sent.push(message)
    },
    declareExchange: noop,
    declareQueue: noop,
    bindQueue: noop,
  } as unknown as Transport
  return { transport, sent }
}

const PY_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const PY_SPAN = '00f067aa0ba902b7'

function jobOf(task: string, headers?: Record<string, unknown>): Job {
  return {
    id: 'job-1',
    task,
    args: [2, 3],
    kwargs: {},
    retries: 0,
    rootId: 'job-1',
    parentId: null,
    group: null,
    hostname: 'w1@host',
    headers,
    origin: 'gen1@py',
    softTimeLimit: null,
    deliveryInfo: { exchange: '', routingKey: 'celery', priority: 0, redelivered: null },
    properties: { correlation_id: 'job-1' },
  }
}

describe('[tracing] spans and headers with a provider registered', () => {
  after(() => {
    api.trace.disable()
    api.context.disable()
  })

  it('a send: apply_async/<task> PRODUCER with the attributes Python sets, its context in traceparent', async () => {
    configureTracing({})
    provider.clear()
    const { transport, sent } = capturing()
    const id = await sendTask(transport, 'proj.add', { args: [1, 2] })
    const [span] = provider.spans
    assert.equal(span!.name, 'apply_async/proj.add')
    assert.equal(span!.kind, api.SpanKind.PRODUCER)
    assert.deepEqual(span!.attributes, {
      'celery.action': 'apply_async',
      'messaging.message.id': id,
      'celery.task_name': 'proj.add',
      'messaging.destination_kind': 'queue',
      'messaging.destination': 'celery',
    })
    const headers = sent[0]!.properties.headers as Record<string, unknown>
    assert.equal(headers.traceparent, `00-${span!.traceId}-${span!.spanId}-01`)
    assert.equal(typeof headers.tsq_sent_at, 'number')
    assert.equal(headers.tracestate, undefined)
  })

  it("a run: run/<task> CONSUMER, the child of the message's traceparent, with Python's attributes and the queue wait", async () => {
    configureTracing({})
    provider.clear()
    const app = createApp({ name: 'proj' })
    app.task('proj.add', (x: number, y: number) => x + y)
    const headers = { traceparent: `00-${PY_TRACE}-${PY_SPAN}-01`, tsq_sent_at: Date.now() / 1000 - 2 }
    const outcome = (await executeJob(app, jobOf('proj.add', headers)).outcome) as Outcome
    assert.equal(outcome.status, 'success')
    const run = provider.spans.find((s) => s.name === 'run/proj.add')!
    assert.equal(run.kind, api.SpanKind.CONSUMER)
    assert.equal(run.traceId, PY_TRACE)
    assert.equal(run.parentSpanId, PY_SPAN)
    assert.equal(run.attributes['celery.action'], 'run')
    assert.equal(run.attributes['celery.state'], 'SUCCESS')
    assert.equal(run.attributes['celery.task_name'], 'proj.add')
    assert.equal(run.attributes['messaging.message.id'], 'job-1')
    assert.equal(run.attributes['messaging.destination'], 'celery')
    assert.equal(run.attributes['celery.hostname'], 'gen1@py')
    assert.ok((run.attributes['tsq.task.queue_wait'] as number) >= 1.9)
    assert.equal(outcome.trace?.traceparent, `00-${PY_TRACE}-${run.spanId}-01`)
  })

  it('a task sent from a task is a child of the run span, with no context manager registered', async () => {
    configureTracing({})
    provider.clear()
    const { transport, sent } = capturing()
    const app = createApp({ name: 'proj' })
    app.task('proj.fan', async () => {
      await Promise.resolve()
      return sendTask(transport, 'proj.leaf', { args: [] })
    })
    await executeJob(app, jobOf('proj.fan', { traceparent: `00-${PY_TRACE}-${PY_SPAN}-01` })).outcome
    const run = provider.spans.find((s) => s.name === 'run/proj.fan')!
    const send = provider.spans.find((s) => s.name === 'apply_async/proj.leaf')!
    assert.equal(send.traceId, PY_TRACE)
    assert.equal(send.parentSpanId, run.spanId)
    assert.equal((sent[0]!.properties.headers as Record<string, unknown>).traceparent, `00-${PY_TRACE}-${send.spanId}-01`)
  })

  it("the worker's follow-ups, sent with the outcome's trace context, are children of the run span", async () => {
    configureTracing({})
    provider.clear()
    const { transport } = capturing()
    const runContext = { traceparent: `00-${PY_TRACE}-${PY_SPAN}-01` }
    await withCarriedContext(runContext, () => sendTask(transport, 'proj.callback', { args: [] }))
    const send = provider.spans.find((s) => s.name === 'apply_async/proj.callback')!
    assert.equal(send.traceId, PY_TRACE)
    assert.equal(send.parentSpanId, PY_SPAN)
    // The scope ends with the work: a send after it starts a trace of its own.
    await sendTask(transport, 'proj.later', { args: [] })
    assert.notEqual(provider.spans.find((s) => s.name === 'apply_async/proj.later')!.traceId, PY_TRACE)
  })

  it('use_span_links: the run span starts a trace of its own and links to the sender span', async () => {
    configureTracing({ use_span_links: true })
    provider.clear()
    const app = createApp({ name: 'proj' })
    app.task('proj.add', (x: number, y: number) => x + y)
    await executeJob(app, jobOf('proj.add', { traceparent: `00-${PY_TRACE}-${PY_SPAN}-01` })).outcome
    const run = provider.spans.find((s) => s.name === 'run/proj.add')!
    assert.notEqual(run.traceId, PY_TRACE)
    assert.equal(run.parentSpanId, null)
    assert.deepEqual(run.links, [{ traceId: PY_TRACE, spanId: PY_SPAN }])
  })

  it('a failed run is an error span with the exception recorded', async () => {
    configureTracing({})
    provider.clear()
    const app = createApp({ name: 'proj' })
    app.task('proj.boom', () => {
      throw new TypeError('no good')
    })
    await executeJob(app, jobOf('proj.boom')).outcome
    const run = provider.spans.find((s) => s.name === 'run/proj.boom')!
    assert.equal(run.parentSpanId, null)
    assert.equal(run.attributes['celery.state'], 'FAILURE')
    assert.equal(run.status.code, api.SpanStatusCode.ERROR)
    assert.equal(run.status.message, 'no good')
    assert.equal(run.events.length, 1)
  })

  it("with the application's context manager, its active span is the parent, and the run span is active in the task", async () => {
    configureTracing({})
    provider.clear()
    api.context.setGlobalContextManager(new AlsContextManager())
    const { transport } = capturing()
    const tracer = api.trace.getTracer('app')
    const app = createApp({ name: 'proj' })
    let activeInTask: string | undefined
    app.task('proj.inner', () => {
      activeInTask = api.trace.getActiveSpan()?.spanContext().spanId
    })
    await tracer.startActiveSpan('request', async (span) => {
      await sendTask(transport, 'proj.add', { args: [] })
      span.end()
    })
    const request = provider.spans.find((s) => s.name === 'request')!
    const send = provider.spans.find((s) => s.name === 'apply_async/proj.add')!
    assert.equal(send.parentSpanId, request.spanId)
    await executeJob(app, jobOf('proj.inner')).outcome
    assert.equal(activeInTask, provider.spans.find((s) => s.name === 'run/proj.inner')!.spanId)
    api.context.disable()
  })

  it('baggage and tracestate the message carried go on to what the task sends', async () => {
    configureTracing({})
    provider.clear()
    const { transport, sent } = capturing()
    const app = createApp({ name: 'proj' })
    app.task('proj.fan', () => sendTask(transport, 'proj.leaf', { args: [] }))
    await executeJob(
      app,
      jobOf('proj.fan', { traceparent: `00-${PY_TRACE}-${PY_SPAN}-01`, tracestate: 'vendor=x', baggage: 'user=alice+smith' }),
    ).outcome
    const headers = sent[0]!.properties.headers as Record<string, unknown>
    assert.equal(headers.tracestate, 'vendor=x')
    assert.equal(headers.baggage, 'user=alice%20smith')
  })

  it('off: no span and no header', async () => {
    configureTracing({ enabled: false })
    provider.clear()
    const { transport, sent } = capturing()
    await sendTask(transport, 'proj.add', { args: [] })
    assert.equal(provider.spans.length, 0)
    const headers = sent[0]!.properties.headers as Record<string, unknown>
    assert.equal(headers.traceparent, undefined)
    assert.equal(headers.tsq_sent_at, undefined)
    configureTracing({})
  })
})
