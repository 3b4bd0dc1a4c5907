// The tsq worker of the interop chain: tsq.relay sends py.relay to the Python
// worker's queue from inside the task and returns its id; tsq.add adds. Traced
// by a provider that appends each span to OTEL_SPANS_FILE (the Python side's format).
import { registerFileTracing } from '../../fixtures/tasks/otel-file-provider.js'
import { configureTracing, createApp } from 'tsq'

registerFileTracing(process.env.OTEL_SPANS_FILE, { contextManager: true })
if (process.env.OTEL_SPAN_LINKS) configureTracing({ use_span_links: true })

export const app = createApp({ name: 'interop', defaultQueue: process.env.OTEL_TSQ_QUEUE })

app.task('tsq.relay', async (x, y) => (await app.sendTask('py.relay', [x, y], {}, { queue: process.env.OTEL_PY_QUEUE })).id)
app.task('tsq.add', (x, y) => x + y)
