import { Args, Flags } from '@oclif/core'
import { migrate, parseQueueRoutes, type MigratedTask, type MigrateResult } from '../admin/index.js'
import { withTransport } from '../app/connection.js'
import { TsqCommand } from '../cli/base-command.js'
import { UsageError } from '../cli/errors.js'
import { floatFlag, integerFlag } from '../cli/oclif-flags.js'

export default class Migrate extends TsqCommand<MigrateResult> {
  static summary = 'Move tasks from one broker to another (any of amqp://, redis://, file://).'
  static description =
    'Each message is moved whole (body, headers, properties: priority, ETA, reply-to) and, with -a, acked on the source only after the destination confirmed it, so a migrate killed at any point loses nothing. Without -a the source keeps its messages (a copy), as Celery\'s.'
  static args = {
    source: Args.string({ description: 'Broker URL to take the tasks from.', required: true }),
    destination: Args.string({ description: 'Broker URL to put them on.', required: true }),
  }
  static flags = {
    limit: integerFlag({ char: 'n', description: 'Number of tasks to migrate (default: all).', min: 0 }),
    timeout: floatFlag({ char: 't', description: 'Stop once no message came for this many seconds.', default: 1, min: 0 }),
    'ack-messages': Flags.boolean({ char: 'a', description: 'Ack messages on the source once the destination has them (a move).' }),
    tasks: Flags.string({ char: 'T', description: 'Comma-separated task names to migrate (the others stay).' }),
    queues: Flags.string({ char: 'Q', description: "Comma-separated queues, `from:to` to rename (default: the app's default queue)." }),
    forever: Flags.boolean({ char: 'F', description: 'Keep migrating until stopped (TERM or Ctrl-C).' }),
  }
  static examples = ['<%= config.bin %> migrate amqp://guest:guest@127.0.0.1// redis://127.0.0.1:6379/0 -a', '<%= config.bin %> migrate redis://old:6379/0 redis://new:6379/0 -a -Q celery,images:pictures -T proj.resize']

  async run(): Promise<MigrateResult> {
    const { args, flags } = await this.parse(Migrate)
    const config = await this.clientConfig(flags)
    const queues = parseQueueRoutes(flags.queues ?? config.defaultQueue)
    if (queues.length === 0) throw new UsageError('no queues to migrate')
    const tasks = flags.tasks ? new Set(flags.tasks.split(',').map((t) => t.trim()).filter(Boolean)) : null
    const lines = !this.jsonEnabled() && !flags.quiet
    // A bar on a terminal, Celery's line per task otherwise (scripts and logs read those).
    const bar = lines && process.stdout.isTTY ? new (await import('cli-progress')).SingleBar({ format: 'Migrating {bar} {value}/{total} {name}', hideCursor: true }) : null
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
        bar.update(task.count, { name: `${task.name}[${task.id}]` })
      } else if (lines) {
        pending.push(`Migrating task ${task.count}/${task.total ?? '?'}: ${task.name}[${task.id}]\n`)
        flushSoon ??= setImmediate(flush)
      }
    }
    try {
      return await withTransport(args.source, (source) =>
        withTransport(args.destination, (destination) =>
          migrate({ source, destination, queues, limit: flags.limit ?? null, timeoutSeconds: flags.timeout, ackMessages: flags['ack-messages'], tasks, forever: flags.forever, onMigrated, stopRequested }),
        ),
      )
    } finally {
      if (flushSoon) clearImmediate(flushSoon)
      flush()
      bar?.stop()
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
    }
  }
}
