import { Flags } from '@oclif/core'
import { TsqCommand } from '../cli/base-command.js'
import { UsageError } from '../cli/errors.js'
import { runEventDump } from '../cli/event-dump.js'

export default class Events extends TsqCommand<void> {
  static summary = "Show the cluster's events as they happen (Celery's `celery events --dump`)."
  static description =
    'Every worker and task event on the broker, one line each as `celery events --dump` prints it, or one JSON object per line with --json. ' +
    'Task events come from workers started with -E (or after `tsq control enable_events`). Celery\'s curses monitor is not built: use --dump or --json.'
  static flags = {
    dump: Flags.boolean({ description: 'Print each event as a line (Celery\'s --dump).' }),
    count: Flags.integer({ description: 'Exit (0) after this many events.', min: 1 }),
    timeout: Flags.string({ description: 'Exit (0) after this many seconds.' }),
  }
  static examples = [
    '<%= config.bin %> events --dump -b redis://127.0.0.1:6379/0',
    '<%= config.bin %> events --json --count 1 -b amqp://guest:guest@127.0.0.1:5672//   # wait for the next event',
  ]

  async run(): Promise<void> {
    const { flags } = await this.parse(Events)
    const json = this.jsonEnabled()
    if (!flags.dump && !json) throw new UsageError("tsq events prints events with --dump (lines) or --json (one object per line); Celery's curses monitor is not built")
    let timeoutSeconds: number | undefined
    if (flags.timeout !== undefined) {
      timeoutSeconds = Number(flags.timeout)
      if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0) throw new UsageError(`--timeout must be a positive number of seconds, got ${JSON.stringify(flags.timeout)}`)
    }
    await runEventDump({
      brokerUrl: this.config_(flags).brokerUrl,
      json,
      count: flags.count,
      timeoutSeconds,
      write: (line) => process.stdout.write(`${line}\n`),
      warn: (line) => process.stderr.write(`${line}\n`),
    })
  }

  /** The events were the output, one per line; there is no document to add at the end. */
  protected override logJson(): void {}
}
