// The worker's side of the failed-task inbox (docs/failed-tasks.md): the
// message of a task that failed is kept on the result backend as it was
// delivered (body bytes, content type and encoding, headers, properties,
// exchange, routing key, queue), so that `tsq failed retry` and the
// dashboard can send that very message again. Kept before the FAILURE is
// stored, so whoever sees the failure finds the message. A keep that fails
// is a warning: it never changes the task's outcome.
import { KEPT_MAX_BODY_BYTES } from '../../backends/index.js'
import type { EncodedException } from '../../app/index.js'
import { taskLabel } from '../../protocol/index.js'
import type { Request } from './request.js'
import type { RunnerOptions } from './runner-options.js'

export async function keepFailedMessage(o: RunnerOptions, request: Request, exc: EncodedException, excText: string): Promise<void> {
  const store = o.backend?.failedStore?.()
  if (!store) return
  const d = request.delivery
  const m = request.message
  if (d.body.length > KEPT_MAX_BODY_BYTES) {
    o.log.warning(`The message of ${taskLabel(m.task, m.id)} (${d.body.length} bytes) is too large to keep for \`tsq failed retry\``)
    return
  }
  try {
    await store.keep({
      taskId: m.id,
      task: m.task,
      worker: o.hostname,
      failedAt: new Date().toISOString(),
      excType: exc.type,
      exception: excText,
      body: d.body,
      properties: { ...d.properties, headers: { ...d.properties.headers } },
      exchange: d.exchange,
      routingKey: d.routingKey,
      queue: d.queue,
    })
  } catch (error) {
    o.log.warning(`The message of ${taskLabel(m.task, m.id)} was not kept for \`tsq failed retry\`: ${(error as Error).message}`)
  }
}
