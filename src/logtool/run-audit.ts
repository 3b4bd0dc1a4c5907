import { LogAudit, RecordSplitter, taskEventOf, type LogRecord, type TaskEvent } from './audit.js'

export interface AuditHandlers {
  /** Every record, with the task event it holds (null: not a task's line). */
  onRecord?: (record: LogRecord, event: TaskEvent | null) => void
}

/** Feeds every record of `lines` to an audit, streaming; returns the audit at the end. */
export async function auditLines(lines: AsyncIterable<string>, handlers: AuditHandlers = {}): Promise<LogAudit> {
  const audit = new LogAudit()
  const splitter = new RecordSplitter()
  const take = (record: LogRecord | null) => {
    if (!record) return
    const event = taskEventOf(record)
    if (event) audit.feed(event)
    handlers.onRecord?.(record, event)
  }
  for await (const line of lines) take(splitter.push(line))
  take(splitter.end())
  return audit
}
