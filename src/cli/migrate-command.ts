// The body of `tsq migrate`, shared by the oclif command and the fast path
// (fast-path.ts), which must not load oclif: nothing here may import it.
import { migrate, parseQueueRoutes, type MigratedTask, type MigrateResult } from '../admin/index.js'
import { withTransportPair } from '../client/index.js'
import { UsageError } from './errors.js'
import { taskLabel } from '../protocol/index.js'

export interface MigrateFlagValues {
  limit?: number
  timeout: number
  'ack-messages'?: boolean
  tasks?: string
  queues?: string
  forever?: boolean
}

export interface MigrateRun {
  source: string
  destination: string
  flags: MigrateFlagValues
  /** The queue -Q defaults to: the app's (or the config module's) default queue. */
  defaultQueue: string
  /** Celery's line per task (or the bar on a terminal); off for --json and -q. */
  lines: boolean
}

export async function runMigrate(run: MigrateRun): Promise<MigrateResult> {
  const { flags } = run
  const queues = parseQueueRoutes(flags.queues ?? run.defaultQueue)
  if (queues.length === 0) throw new UsageError('no queues to migrate')
  const tasks = flags.tasks
    ? new Set(
        flags.tasks
          .split(',')
          .map((t) => t.trim())
          .filter(Boolean),
      )
    : null
  // A bar on a terminal, Celery's line per task otherwise (scripts and logs read those).
  const bar =
    run.lines && process.stdout.isTTY
      ? new (await import('cli-progress')).SingleBar({ format: 'Migrating {bar} {value}/{total} {name}', hideCursor: true })
      : null
  let stop: () => void = () => undefined
  const stopRequested = new Promise<void>((resolve) => (stop = resolve))
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  // One write per turn of the event loop, not one per task: a write to a pipe is a synchronous
  // system call in Node, and 10,000 of them were a visible share of a migrate's time.
  let pending: string[] = []
  let flushSoon: NodeJS.Immediate | null = null
  const flush = () => {
    flushSoon = null
    if (pending.length) process.stdout.write(pending.join(''))
    pending = []
  }
  const onMigrated = (task: MigratedTask) => {
    if (bar) {
      if (task.count === 1) bar.start(task.total ?? 0, 0, { name: '' })
      if (task.total !== null && task.count > task.total) bar.setTotal(task.count)
      bar.update(task.count, { name: `${taskLabel(task.name, task.id)}` })
    } else if (run.lines) {
      pending.push(`Migrating task ${task.count}/${task.total ?? '?'}: ${taskLabel(task.name, task.id)}\n`)
      flushSoon ??= setImmediate(flush)
    }
  }
  try {
    return await withTransportPair([run.source, run.destination], (source, destination) =>
      migrate({
        source,
        destination,
        queues,
        limit: flags.limit ?? null,
        timeoutSeconds: flags.timeout,
        ackMessages: flags['ack-messages'] === true,
        tasks,
        forever: flags.forever === true,
        onMigrated,
        stopRequested,
      }),
    )
  } finally {
    if (flushSoon) clearImmediate(flushSoon)
    flush()
    bar?.stop()
    process.off('SIGINT', stop)
    process.off('SIGTERM', stop)
  }
}
