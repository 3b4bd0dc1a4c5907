// tsq-test: slow 2
// One trace across a Python client and tsq workers, as OpenTelemetry's Celery
// instrumentation writes and reads it: a Python Celery 5.2.6 client sets
// `traceparent` (and `baggage`) as top-level headers where that
// instrumentation injects them; the tsq worker's run/<task> span (prefork
// pool: the context crosses into the slot) is its child, the task the run sends
// is an apply_async/<task> span under the run, and that task's run is under
// it: one trace. The same from a tsq client, and with use_span_links (threads
// pool) the run starts a trace of its own linked to the sender's span.
// Spans are read from a file the worker's tracer provider appends to
// (test/fixtures/tasks/traced-tasks.js).
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import * as api from '@opentelemetry/api'
import { createApp } from '../../src/index.js'
import { REDIS_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { MemoryTracerProvider, readSpans, type RecordedSpan } from '../helpers/otel-memory.js'
import { deleteCeleryQueues } from './helpers/cleanup.js'
import { PY_DIR, PYTHON, REPO_ROOT, parseJsonOut, run } from './helpers/python-worker.js'
import { startTsqWorker, type TsqWorker, type WiEnv } from './worker-helpers/tsq-worker.js'

const skip = await brokerSkipReason('redis')
const MODULE = resolve(REPO_ROOT, 'test/fixtures/tasks/traced-tasks.js')
const PY_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const PY_SPAN = '00f067aa0ba902b7'

function backendOf(broker: string): string {
  const url = new URL(broker)
  url.pathname = '/1'
  return url.toString()
}

/** otel_client.py send: the Python client's send with the trace headers, and its result. */
async function pySend(env: WiEnv, name: string, args: unknown[], baggage = ''): Promise<{ id: string; result: unknown }> {
  const res = await run(
    PYTHON,
    [resolve(PY_DIR, 'otel_client.py'), 'send', name, JSON.stringify(args), `00-${PY_TRACE}-${PY_SPAN}-01`, baggage, '30'],
    {
      cwd: PY_DIR,
      env: {
        ...process.env,
        PYTHONDONTWRITEBYTECODE: '1',
        TSQ_WI_BROKER: env.broker,
        TSQ_WI_BACKEND: env.backend,
        TSQ_WI_QUEUE: env.queue,
      },
      timeoutMs: 60_000,
    },
  )
  if (res.code !== 0) throw new Error(`otel_client.py exited ${res.code}\n${res.stdout}\n${res.stderr}`)
  return parseJsonOut(res, 'otel_client.py') as { id: string; result: unknown }
}

/** The spans in `file` once `names` (span name and message id) have all ended. */
async function spansFor(file: string, wanted: Array<[string, string]>): Promise<RecordedSpan[]> {
  return waitFor(
    () => {
      const spans = readSpans(file)
      const all = wanted.every(([name, id]) => spans.some((s) => s.name === name && s.attributes['messaging.message.id'] === id))
      return all ? spans : undefined
    },
    { timeoutMs: 20_000, what: `spans ${wanted.map((w) => w.join(' ')).join(', ')} in ${file}` },
  )
}

const find = (spans: RecordedSpan[], name: string, id: string): RecordedSpan => {
  const span = spans.find((s) => s.name === name && s.attributes['messaging.message.id'] === id)
  assert.ok(span, `no ${name} for ${id} in ${JSON.stringify(spans.map((s) => [s.name, s.attributes['messaging.message.id']]))}`)
  return span
}

describe('[tracing] trace headers between Python clients and tsq workers', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-otel-'))
  const parentEnv: WiEnv = { broker: REDIS_URL, backend: backendOf(REDIS_URL), queue: uniqueName('tsq-otel') }
  const linkEnv: WiEnv = { broker: REDIS_URL, backend: backendOf(REDIS_URL), queue: uniqueName('tsq-otel-links') }
  const parentSpans = join(dir, 'parent.jsonl')
  const linkSpans = join(dir, 'links.jsonl')
  let parentWorker: TsqWorker | undefined
  let linkWorker: TsqWorker | undefined

  before(async () => {
    // The worker's environment is this process's at its start.
    process.env.TSQ_TEST_SPANS_FILE = parentSpans
    parentWorker = await startTsqWorker({ env: parentEnv, module: MODULE, pool: 'prefork', concurrency: 2, queueFromApp: true })
    process.env.TSQ_TEST_SPANS_FILE = linkSpans
    process.env.TSQ_TEST_SPAN_LINKS = '1'
    try {
      linkWorker = await startTsqWorker({ env: linkEnv, module: MODULE, pool: 'threads', concurrency: 2, queueFromApp: true })
    } finally {
      delete process.env.TSQ_TEST_SPANS_FILE
      delete process.env.TSQ_TEST_SPAN_LINKS
    }
  })

  after(async () => {
    await parentWorker?.stop()
    await linkWorker?.stop()
    await deleteCeleryQueues('redis', REDIS_URL, [parentEnv.queue, linkEnv.queue])
    rmSync(dir, { recursive: true, force: true })
  })

  const withLog = (msg: string) => `${msg}\n--- worker log ---\n${parentWorker?.logTail() ?? ''}`

  it("Python's traceparent -> run/proj.relay (its child) -> apply_async/proj.add -> run/proj.add: one trace", async () => {
    const sent = await pySend(parentEnv, 'proj.relay', [2, 3], 'user=alice+smith')
    const childId = sent.result as string
    const spans = await spansFor(parentSpans, [
      ['run/proj.relay', sent.id],
      ['apply_async/proj.add', childId],
      ['run/proj.add', childId],
    ])
    const relay = find(spans, 'run/proj.relay', sent.id)
    const send = find(spans, 'apply_async/proj.add', childId)
    const add = find(spans, 'run/proj.add', childId)
    assert.equal(relay.traceId, PY_TRACE, withLog('the run joins the trace the Python client sent'))
    assert.equal(relay.parentSpanId, PY_SPAN)
    assert.equal(relay.kind, api.SpanKind.CONSUMER)
    assert.equal(relay.attributes['celery.action'], 'run')
    assert.equal(relay.attributes['celery.state'], 'SUCCESS')
    assert.equal(relay.attributes['celery.task_name'], 'proj.relay')
    assert.equal(relay.attributes['messaging.destination'], parentEnv.queue)
    assert.match(String(relay.attributes['celery.hostname']), /^gen\d+@/, "the Python client's origin")
    assert.equal(send.kind, api.SpanKind.PRODUCER)
    assert.equal(send.traceId, PY_TRACE)
    assert.equal(send.parentSpanId, relay.spanId, 'sent from inside the run')
    assert.equal(send.attributes['celery.action'], 'apply_async')
    assert.equal(add.traceId, PY_TRACE)
    assert.equal(add.parentSpanId, send.spanId)
    assert.equal(typeof add.attributes['tsq.task.queue_wait'], 'number', 'a tsq send says when it was sent')
  })

  it('a tsq client -> tsq worker -> (sends) -> tsq worker: one trace under the client span', async () => {
    const provider = new MemoryTracerProvider()
    api.trace.setGlobalTracerProvider(provider)
    const app = createApp({ name: 'proj', broker: parentEnv.broker, resultBackend: parentEnv.backend, defaultQueue: parentEnv.queue })
    try {
      const result = await app.sendTask('proj.relay', [4, 5])
      const childId = (await result.get({ timeout: 30 })) as string
      const client = provider.spans.find((s) => s.name === 'apply_async/proj.relay')!
      assert.ok(client, 'the client made its send span')
      const spans = await spansFor(parentSpans, [
        ['run/proj.relay', result.id],
        ['run/proj.add', childId],
      ])
      const relay = find(spans, 'run/proj.relay', result.id)
      const send = find(spans, 'apply_async/proj.add', childId)
      const add = find(spans, 'run/proj.add', childId)
      assert.equal(relay.traceId, client.traceId)
      assert.equal(relay.parentSpanId, client.spanId)
      assert.equal(send.parentSpanId, relay.spanId)
      assert.equal(add.parentSpanId, send.spanId)
      assert.equal(add.traceId, client.traceId)
    } finally {
      await app.close()
      api.trace.disable()
    }
  })

  it('use_span_links: the run starts a trace of its own with a link to the sender span', async () => {
    const sent = await pySend(linkEnv, 'proj.add', [1, 1])
    assert.equal(sent.result, 2)
    const spans = await spansFor(linkSpans, [['run/proj.add', sent.id]])
    const add = find(spans, 'run/proj.add', sent.id)
    assert.notEqual(add.traceId, PY_TRACE)
    assert.equal(add.parentSpanId, null)
    assert.deepEqual(add.links, [{ traceId: PY_TRACE, spanId: PY_SPAN }])
  })
})
