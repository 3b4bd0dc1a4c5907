// The tsq client of the interop chain: inside a span of its own, sends
// tsq.relay (-> py.relay -> tsq.add) and prints the chain's ids as JSON.
import * as api from '@opentelemetry/api'
import { registerFileTracing } from '../../fixtures/tasks/otel-file-provider.js'
import { createApp } from 'tsq'

registerFileTracing(process.env.OTEL_SPANS_FILE, { contextManager: true })
const app = createApp({ name: 'interop', broker: process.env.OTEL_BROKER, resultBackend: process.env.OTEL_BACKEND })
const tracer = api.trace.getTracer('interop')
const span = tracer.startSpan('tsq-client')
const first = await api.context.with(api.trace.setSpan(api.context.active(), span), () =>
  app.sendTask('tsq.relay', [2, 3], {}, { queue: process.env.OTEL_TSQ_QUEUE }),
)
span.end()
const pyId = await first.get({ timeout: 30 })
const addId = await app.asyncResult(pyId).get({ timeout: 30 })
console.log(JSON.stringify({ relay: first.id, py: pyId, add: addId }))
await app.close()
