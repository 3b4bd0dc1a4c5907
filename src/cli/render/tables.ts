// Tables for the replies that read better side by side. cli-table3 is loaded
// lazily so that commands without tables never pay for it.
import type { ChalkInstance } from 'chalk'
import { comparePyStr } from '../../protocol/index.js'

type Row = Array<string | number>

async function table(head: string[], rows: Row[], c: ChalkInstance): Promise<string> {
  const { default: Table } = await import('cli-table3')
  const t = new Table({ head: head.map((h) => c.bold(h)), style: { head: [], border: [] } })
  for (const row of rows) t.push(row.map(String))
  return t.toString()
}

function entries(replies: Record<string, unknown>): Array<[string, unknown]> {
  return Object.entries(replies).sort(([a], [b]) => comparePyStr(a, b))
}

export async function statusTable(replies: Record<string, unknown>, c: ChalkInstance): Promise<string> {
  const rows = entries(replies).map(([node, reply]) => {
    const body = reply as { ok?: unknown; error?: unknown }
    return [node, body && 'ok' in body ? c.green('OK') : c.red('ERROR'), String(body?.ok ?? body?.error ?? '')]
  })
  return table(['Node', 'Status', 'Reply'], rows, c)
}

export async function activeQueuesTable(replies: Record<string, unknown>, c: ChalkInstance): Promise<string> {
  const rows: Row[] = []
  for (const [node, reply] of entries(replies)) {
    const queues = Array.isArray(reply) ? (reply as Array<Record<string, unknown>>) : []
    if (queues.length === 0) rows.push([node, '- none -', '', '', ''])
    for (const q of queues) {
      const ex = (q.exchange ?? {}) as Record<string, unknown>
      rows.push([node, String(q.name ?? ''), String(ex.name ?? ''), String(ex.type ?? ''), String(q.routing_key ?? '')])
    }
  }
  return table(['Node', 'Queue', 'Exchange', 'Type', 'Routing key'], rows, c)
}

export async function statsTable(replies: Record<string, unknown>, c: ChalkInstance): Promise<string> {
  const rows = entries(replies).map(([node, reply]) => {
    const s = (reply ?? {}) as Record<string, unknown>
    const pool = (s.pool ?? {}) as Record<string, unknown>
    const broker = (s.broker ?? {}) as Record<string, unknown>
    const total = (s.total ?? {}) as Record<string, number>
    const processed = Object.values(total).reduce((a, b) => a + (Number(b) || 0), 0)
    const procs = Array.isArray(pool.processes) ? pool.processes.length : ''
    return [
      node,
      String(s.pid ?? ''),
      String(pool['max-concurrency'] ?? ''),
      procs,
      String(s.prefetch_count ?? ''),
      String(broker.transport ?? ''),
      `${s.uptime ?? ''}s`,
      processed,
    ]
  })
  return table(['Node', 'PID', 'Concurrency', 'Processes', 'Prefetch', 'Transport', 'Uptime', 'Tasks'], rows, c)
}
