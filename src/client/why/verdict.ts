// `tsq why`'s one answer from what evidence.ts gathered: which state the task
// is in, the exit status a script branches on, one line that says it, and the
// evidence it rests on, source by source. Pure: the dashboard shows the same.
import { exceptionText, isExceptionInfo, jsErrorName } from '../../protocol/index.js'
import type { Holder, WhyEvidence } from './evidence.js'

export type WhyState = 'succeeded' | 'failed' | 'revoked' | 'running' | 'held' | 'queued' | 'delayed' | 'unknown'

/**
 * The exit status of each answer (docs/errors.md#tsq-why): 0 and 1 as `tsq
 * result` ends, then 3 to 7, below sysexits' 64 and clear of the 2 a shell
 * uses for its own misuse. Errors (an unreachable broker: 69) keep theirs.
 */
export const WHY_EXIT_CODES: Readonly<Record<WhyState, number>> = {
  succeeded: 0,
  failed: 1,
  queued: 3,
  delayed: 3,
  held: 4,
  running: 5,
  revoked: 6,
  unknown: 7,
}

export interface WhyAnswer {
  taskId: string
  state: WhyState
  /** Held: 'reserved', 'scheduled', 'rate-limited' or 'unacked'; queued: 'position-unknown' where the broker cannot search. */
  detail: string | null
  /** False where the answer is a likelihood (a RabbitMQ queue that holds messages, one of which may be it). */
  certain: boolean
  exitCode: number
  /** The one answer, one line. */
  summary: string
  /** What each source said, one line each. */
  evidence: string[]
  /** Seconds from sent to started, where both are known. */
  queueWaitS: number | null
  /** Seconds since it was sent, while it has not started, where the send is known. */
  waitingS: number | null
  facts: WhyEvidence
}

const iso = (s: number): string => new Date(s * 1000).toISOString().replace(/\.\d+Z$/, 'Z')
const secs = (s: number): string => `${s < 10 ? s.toFixed(1) : Math.round(s)} s`
const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`

function failureText(result: unknown): string {
  return isExceptionInfo(result) ? exceptionText({ ...result, exc_type: jsErrorName(result) }) : 'no exception stored'
}

function holderLine(h: Holder, at: number): string {
  const pid = h.workerPid !== null ? ` (pid ${h.workerPid})` : ''
  switch (h.state) {
    case 'active':
      return `running on ${h.node}${pid}${h.timeStart !== null ? ` since ${iso(h.timeStart)}, ${secs(Math.max(0, at - h.timeStart))}` : ''}`
    case 'scheduled': {
      const eta = h.eta ? Date.parse(h.eta) / 1000 : null
      return `held by ${h.node} until its ETA ${h.eta ?? '?'}${eta !== null ? `, in ${secs(Math.max(0, eta - at))}` : ''}`
    }
    case 'rate-limited': {
      const rate = h.rateLimit?.rate ? ` (${String(h.rateLimit.rate)})` : ''
      const wait = h.rateLimit?.waitS != null ? `: next token in ${secs(h.rateLimit.waitS)}` : ''
      return `held by ${h.node} for its task's rate limit${rate}${wait}`
    }
    default:
      return `reserved by ${h.node}: prefetched, waiting for a free pool slot`
  }
}

function evidenceLines(e: WhyEvidence): string[] {
  const lines: string[] = []
  const b = e.backend
  if (!b) lines.push('result backend: none configured (or rpc://, which only the sender reads)')
  else if (b.error) lines.push(`result backend ${b.url}: could not read it: ${b.error}`)
  else if (!b.record) lines.push(`result backend ${b.url}: no record of it (Celery's PENDING)`)
  else
    lines.push(
      `result backend ${b.url}: ${b.record.status}${b.record.date_done ? ` at ${b.record.date_done}` : ''}${b.record.status === 'FAILURE' ? `: ${failureText(b.record.result)}` : ''}`,
    )
  const ev = e.events
  const from = ev.source === 'dashboard' ? 'events (the dashboard)' : `events (listened ${ev.windowS ?? '?'} s)`
  lines.push(
    ev.timeline.length === 0
      ? `${from}: none of it`
      : `${from}: ${ev.timeline.map((t) => `${t.type} ${iso(t.timestamp)}${t.hostname && t.type !== 'task-sent' ? ` (${t.hostname})` : ''}`).join(', ')}`,
  )
  const w = e.workers
  lines.push(w.replied.length === 0 ? 'workers: none replied' : `workers: ${plural(w.replied.length, 'replied')} (${w.replied.join(', ')})`)
  for (const h of w.holders) lines.push(`  ${holderLine(h, e.at)}`)
  if (w.revokedBy.length > 0) lines.push(`  in the revoked list of ${w.revokedBy.join(', ')}`)
  for (const q of e.queues) {
    const here =
      e.located?.found?.where === 'queue' && e.located.found.queue === q.name
        ? `, it is at position ${e.located.found.position ?? '?'}`
        : ''
    const depth = q.depth === null ? 'depth unknown (no such queue?)' : plural(q.depth, 'message')
    lines.push(`queue ${q.name}: ${depth}, ${plural(q.consumers ?? 0, 'consumer')}${here}`)
  }
  if (e.located) {
    const what = `searched ${plural(e.located.scanned, 'message')}${e.located.truncated ? ' (stopped at the limit: a miss past it is no proof)' : ''}`
    lines.push(
      e.located.found?.where === 'unacked'
        ? `broker: ${what}; delivered from ${e.located.found.queue} and not acked`
        : `broker: ${what}${e.located.found ? '' : ', not found'}`,
    )
  } else if (e.broker.kind === 'amqp') lines.push('broker: RabbitMQ cannot search a queue without taking its messages: positions unknown')
  if (e.delayLadder !== null) lines.push(`RabbitMQ's delay ladder (celery_delayed_*): ${plural(e.delayLadder, 'message')}`)
  return lines
}

interface Core {
  state: WhyState
  detail: string | null
  summary: string
  certain?: boolean
}

function decide(e: WhyEvidence): Core {
  const holders = e.workers.holders
  const active = holders.find((h) => h.state === 'active')
  if (active) return { state: 'running', detail: null, summary: `Running: ${holderLine(active, e.at).replace(/^running /, '')}.` }
  const record = e.backend?.record
  const status = record?.status ?? (e.events.source === 'dashboard' ? e.events.state : null)
  const said = record ? 'the result backend' : 'its events'
  const done = record?.date_done ? ` at ${record.date_done}` : ''
  if (status === 'SUCCESS') return { state: 'succeeded', detail: null, summary: `Succeeded${done} (${said}).` }
  if (status === 'FAILURE')
    return { state: 'failed', detail: null, summary: `Failed${done}: ${record ? failureText(record.result) : 'see its events'} (${said}).` }
  if (status === 'REVOKED') return { state: 'revoked', detail: null, summary: `Revoked${done} (${said}).` }
  const found = e.located?.found
  if (e.workers.revokedBy.length > 0) {
    const still = found?.where === 'queue' ? `; it still waits in ${found.queue}, and the worker that takes it discards it` : ''
    return { state: 'revoked', detail: null, summary: `Revoked: in the revoked list of ${e.workers.revokedBy.join(', ')}${still}.` }
  }
  const held = holders[0]
  if (held) {
    const line = holderLine(held, e.at)
    return { state: 'held', detail: held.state, summary: `${line[0]!.toUpperCase()}${line.slice(1)}.` }
  }
  if (found?.where === 'queue') {
    const q = e.queues.find((x) => x.name === found.queue)
    const place = found.position === 0 ? 'next in line' : `${plural(found.position ?? 0, 'message')} ahead of it`
    const of = found.depth !== null ? ` of ${found.depth}` : ''
    return {
      state: 'queued',
      detail: null,
      summary: `Queued in ${found.queue}: position ${found.position ?? '?'}${of} (${place}), ${plural(q?.consumers ?? 0, 'consumer')}.`,
    }
  }
  if (found?.where === 'unacked') {
    // Celery 5.2.6 keeps a request that waits for its rate limit in the limit's bucket, which no remote command lists.
    const why =
      e.workers.replied.length > 0
        ? 'a Celery worker holding it for its rate limit does not say so; else its worker may be gone'
        : 'its worker may be gone'
    return {
      state: 'held',
      detail: 'unacked',
      summary: `Delivered from ${found.queue} to a consumer that has not acked it, and no worker that replied says it holds it: ${why} (the broker restores it after the visibility timeout).`,
    }
  }
  if (!e.located && e.broker.kind === 'amqp') {
    // RabbitMQ: the message cannot be looked for; a queue with messages may hold it.
    const named = e.events.routingKey
    const candidates = e.queues.filter((q) => (q.depth ?? 0) > 0)
    const q = candidates.find((c) => c.name === named) ?? candidates[0]
    if (q)
      return {
        state: 'queued',
        detail: 'position-unknown',
        certain: false,
        summary: `Maybe queued: no worker holds it, and queue ${q.name} holds ${plural(q.depth!, 'message')} with ${plural(q.consumers ?? 0, 'consumer')}; position unknown (RabbitMQ cannot search a queue without taking its messages).`,
      }
    if ((e.delayLadder ?? 0) > 0)
      return {
        state: 'delayed',
        detail: 'position-unknown',
        certain: false,
        summary: `Maybe delayed: no worker holds it, and RabbitMQ's delay ladder holds ${plural(e.delayLadder!, 'message')} waiting for their time.`,
      }
  }
  const looked = e.queues.map((q) => q.name).join(', ') || 'no queue'
  if (status)
    return {
      state: 'unknown',
      detail: status,
      summary: `No worker holds it and it is not in ${looked}, but ${said} ${record ? 'says' : 'say'} ${status}: ${status === 'STARTED' ? 'the worker that ran it may be gone' : 'it is nowhere now'}.`,
    }
  return {
    state: 'unknown',
    detail: null,
    summary: `No trace of it: no result stored, no event seen, no worker holds it, not in ${looked}.`,
  }
}

function waits(e: WhyEvidence, state: WhyState): { queueWaitS: number | null; waitingS: number | null } {
  const sent = e.events.sent
  const started = e.workers.holders.find((h) => h.state === 'active')?.timeStart ?? e.events.started
  const queueWaitS = sent !== null && started !== null ? Math.max(0, started - sent) : null
  const waitingS =
    sent !== null && started === null && (state === 'queued' || state === 'held' || state === 'delayed') ? Math.max(0, e.at - sent) : null
  return { queueWaitS, waitingS }
}

export function whyVerdict(e: WhyEvidence): WhyAnswer {
  const core = decide(e)
  const { queueWaitS, waitingS } = waits(e, core.state)
  const evidence = evidenceLines(e)
  if (queueWaitS !== null) evidence.push(`queue wait: ${secs(queueWaitS)} from sent to started`)
  if (waitingS !== null) evidence.push(`waiting: ${secs(waitingS)} since it was sent`)
  return {
    taskId: e.taskId,
    state: core.state,
    detail: core.detail,
    certain: core.certain ?? true,
    exitCode: WHY_EXIT_CODES[core.state],
    summary: core.summary,
    evidence,
    queueWaitS,
    waitingS,
    facts: e,
  }
}
