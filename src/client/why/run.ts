// `tsq why` for one task from a client: one connection to the broker, the
// result backend where one is configured (rpc:// results go only to their
// sender, so none is read there), the workers asked for `timeoutS`.
import { createResultBackend, type BackendOptions } from '../../backends/index.js'
import { MailboxClient, type TransportSettings } from '../../transport/index.js'
import { withTransport } from '../connection.js'
import { gatherEvidence } from './evidence.js'
import { whyVerdict, type WhyAnswer } from './verdict.js'

export interface WhyTaskOptions {
  brokerUrl: string
  transportSettings?: TransportSettings
  resultBackend?: string
  backendOptions?: Omit<BackendOptions, 'codec'>
  /** Queues to look in besides those the workers consume and the events name. */
  queues: readonly string[]
  /** Seconds to wait for the workers' replies (and to listen for the task's events meanwhile). */
  timeoutS: number
}

export async function whyTask(taskId: string, o: WhyTaskOptions): Promise<WhyAnswer> {
  const backendUrl = o.resultBackend && !/^rpc:/.test(o.resultBackend) ? o.resultBackend : undefined
  const backend = backendUrl ? await createResultBackend(backendUrl, o.backendOptions) : null
  try {
    const evidence = await withTransport(
      o.brokerUrl,
      (transport) =>
        gatherEvidence({
          taskId,
          transport,
          // Each broadcast its own mailbox client (its own reply queue): the four go out at once.
          broadcast: (method, args) => new MailboxClient(transport).broadcast(method, { arguments: args, timeout: o.timeoutS }),
          backend: backend ? { url: backend.displayUrl, read: (id) => backend.get(id) } : null,
          queues: o.queues,
        }),
      o.transportSettings,
    )
    return whyVerdict(evidence)
  } finally {
    await backend?.close().catch(() => undefined)
  }
}
