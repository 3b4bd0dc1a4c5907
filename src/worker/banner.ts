// The start-up banner, laid out as Celery's so operators find things where
// they expect them: app, transport (password masked), results, pool, events, queues.
import { arch, platform, release } from 'node:os'
import { maskUrl } from '../transport/index.js'
import { escapeControl } from '../protocol/index.js'
import type { QueueDeclaration } from './control/control-handlers.js'

export interface BannerInfo {
  nodename: string
  version: string
  app: string
  brokerUrl: string
  resultBackend: string | undefined
  /** How the broker and backend connections are secured (describeTlsPlan), shown after their URLs. */
  brokerTls?: string | null
  backendTls?: string | null
  concurrency: number | string
  pool: string
  taskEvents: boolean
  queues: QueueDeclaration[]
  tasks: string[]
}

export function banner(b: BannerInfo): string {
  const left = [
    ' -------------- ',
    '--- ***** ----- ',
    '-- ******* ---- ',
    '- *** --- * --- ',
    '- ** ---------- ',
    '- ** ---------- ',
    '- ** ---------- ',
    '- ** ---------- ',
    '- ** ---------- ',
    '- *** --- * --- ',
    '-- ******* ---- ',
    '--- ***** ----- ',
    ' -------------- ',
  ]
  const right = [
    `${b.nodename} v${b.version} (tsq)`,
    '',
    `${platform()}-${release()}-${arch()} ${new Date().toISOString().replace('T', ' ').slice(0, 19)}`,
    '',
    '[config]',
    `.> app:         ${b.app}`,
    `.> transport:   ${maskUrl(b.brokerUrl)}${b.brokerTls ? ` (${b.brokerTls})` : ''}`,
    `.> results:     ${b.resultBackend ? maskUrl(b.resultBackend) : 'disabled://'}${b.resultBackend && b.backendTls ? ` (${b.backendTls})` : ''}`,
    `.> concurrency: ${b.concurrency} (${b.pool})`,
    `.> task events: ${b.taskEvents ? 'ON' : 'OFF (enable -E to monitor tasks in this worker)'}`,
    '',
    '',
    '[queues]',
  ]
  const lines = left.map((l, i) => `${l}${right[i] ?? ''}`.trimEnd())
  for (const q of b.queues)
    lines.push(`                .> ${q.name.padEnd(16)} exchange=${q.exchange}(${q.exchangeType}) key=${q.routingKey}`)
  lines.push('', '[tasks]', ...b.tasks.sort().map((t) => `  . ${escapeControl(t)}`), '')
  return lines.join('\n')
}
