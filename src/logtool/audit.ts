// Reads worker logs in Celery 5's format, which tsq's worker writes too:
// `[2026-11-25 17:00:00,123: INFO/MainProcess] Task proj.add[ID] received`.
// Celery's own logtool matches Celery 3's lines (`] Received`, `] Task ...`),
// so on a Celery 5 log it counts every `received` line as a failure; this one
// reads each record by its message. Pure: lines in, counts and records out.

/** One record: its first line and the lines that continue it (a traceback). */
export interface LogRecord {
  header: string
  continuation: string[]
}

export type TaskOutcome = 'succeeded' | 'failed' | 'retried' | 'ignored' | 'rejected' | 'revoked'

export interface TaskEvent {
  kind: 'received' | TaskOutcome
  name: string
  id: string
  record: LogRecord
}

export interface LogStats {
  /** Distinct task ids seen received. */
  total: number
  succeeded: number
  failed: number
  /** `retry:` lines: a retried task is received again under the same id. */
  retried: number
  /** Ids whose last word was a final state (succeeded, failed, ignored, rejected, revoked). */
  completed: number
  /** Received, and no final state after: still running or lost when the log ends. */
  incomplete: number
  /** Tasks received per name, most first. */
  tasks: Array<{ name: string; count: number }>
}

const RECORD_START = /^\[\d{4}-\d\d-\d\d [^\]]*\] /
const TASK_LINE = /^\[[^\]]*\] Task ([\w.:-]+)\[([^\]]+)\] (received|succeeded in|raised |retry:|ignored|rejected)/
const REVOKED_LINE = /^\[[^\]]*\] Discarding revoked task: ([\w.:-]+)\[([^\]]+)\]/

const OUTCOME: Record<string, TaskEvent['kind']> = {
  received: 'received',
  'succeeded in': 'succeeded',
  'raised ': 'failed',
  'retry:': 'retried',
  ignored: 'ignored',
  rejected: 'rejected',
}

/**
 * Groups lines into records: a line that starts with `[YYYY-MM-DD ` opens one,
 * any other line continues the open one (tracebacks, multi-line results).
 */
export class RecordSplitter {
  private open: LogRecord | null = null

  /** Returns the record that `line` closed, if any. */
  push(line: string): LogRecord | null {
    if (RECORD_START.test(line) || this.open === null) {
      const closed = this.open
      this.open = { header: line, continuation: [] }
      return closed
    }
    this.open.continuation.push(line)
    return null
  }

  /** The last record, at the end of the input. */
  end(): LogRecord | null {
    const last = this.open
    this.open = null
    return last
  }
}

export function taskEventOf(record: LogRecord): TaskEvent | null {
  const task = TASK_LINE.exec(record.header)
  if (task) return { kind: OUTCOME[task[3]!]!, name: task[1]!, id: task[2]!, record }
  const revoked = REVOKED_LINE.exec(record.header)
  if (revoked) return { kind: 'revoked', name: revoked[1]!, id: revoked[2]!, record }
  return null
}

/** Counts as records are fed, in constant memory per task id. */
export class LogAudit {
  private readonly state = new Map<string, { name: string; final: boolean }>()
  private readonly perName = new Map<string, number>()
  private succeeded = 0
  private failed = 0
  private retried = 0

  feed(event: TaskEvent): void {
    if (event.kind === 'received') {
      const known = this.state.get(event.id)
      if (!known) this.perName.set(event.name, (this.perName.get(event.name) ?? 0) + 1)
      // A retried task comes back under its id; its final state is yet to come.
      this.state.set(event.id, { name: event.name, final: false })
      return
    }
    if (event.kind === 'retried') this.retried += 1
    else if (event.kind === 'succeeded') this.succeeded += 1
    else if (event.kind === 'failed') this.failed += 1
    const entry = this.state.get(event.id) ?? { name: event.name, final: false }
    entry.final = event.kind !== 'retried'
    this.state.set(event.id, entry)
  }

  /** Received and never finished, in the order first received. */
  incomplete(): Array<{ id: string; name: string }> {
    return [...this.state].filter(([, s]) => !s.final).map(([id, s]) => ({ id, name: s.name }))
  }

  stats(): LogStats {
    let completed = 0
    for (const s of this.state.values()) if (s.final) completed += 1
    const tasks = [...this.perName]
      .map(([name, count]) => ({ name, count }))
      .sort((a, b) => b.count - a.count || a.name.localeCompare(b.name))
    const total = [...this.perName.values()].reduce((a, b) => a + b, 0)
    return {
      total,
      succeeded: this.succeeded,
      failed: this.failed,
      retried: this.retried,
      completed,
      incomplete: this.state.size - completed,
      tasks,
    }
  }
}

/** Celery's REPORT_FORMAT, with the counts it gets right here and the two it lacks. */
export function formatStats(s: LogStats): string {
  return [
    '',
    'Report',
    '======',
    `Task total: ${s.total}`,
    `Task errors: ${s.failed}`,
    `Task success: ${s.succeeded}`,
    `Task completed: ${s.completed}`,
    `Task retries: ${s.retried}`,
    `Task incomplete: ${s.incomplete}`,
    'Tasks',
    '=====',
    ...s.tasks.map((t) => `${t.name}: ${t.count}`),
    '',
  ].join('\n')
}

export function recordText(record: LogRecord): string {
  return [record.header, ...record.continuation].join('\n')
}
