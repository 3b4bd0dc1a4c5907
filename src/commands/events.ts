import { Flags } from '@oclif/core'
import { TsqCommand } from '../cli/base-command.js'
import { floatFlag, integerFlag } from '../cli/flags/oclif-flags.js'
import { UsageError } from '../cli/errors.js'
import { runEventDump } from '../cli/events/event-dump.js'
import { runEventMonitor } from '../cli/events/event-monitor.js'

export default class Events extends TsqCommand<void> {
  static summary = "Show the cluster's events as they happen (Celery's `celery events`)."
  static description =
    "In a terminal, a live view as Celery's curses monitor shows it: the latest tasks, the selected task, the workers online (j/k select, c revokes the selected task, q quits). " +
    'With --dump, every worker and task event on the broker, one line each as `celery events --dump` prints it; with --json, one JSON object per line. ' +
    'Task events come from workers started with -E (or after `tsq control enable_events`).'
  static flags = {
    dump: Flags.boolean({ description: "Print each event as a line (Celery's --dump)." }),
    count: integerFlag({ description: 'Exit (0) after this many events.', min: 1 }),
    timeout: floatFlag({ description: 'Exit (0) after this many seconds.', min: 0, minOpen: true }),
  }
  static examples = [
    '<%= config.bin %> events -b redis://127.0.0.1:6379/0   # the live view',
    '<%= config.bin %> events --dump -b redis://127.0.0.1:6379/0',
    '<%= config.bin %> events --json --count 1 -b amqp://guest:guest@127.0.0.1:5672//   # wait for the next event',
  ]

  async run(): Promise<void> {
    const { flags } = await this.parse(Events)
    const json = this.jsonEnabled()
    const { brokerUrl, transportSettings } = await this.clientConfig(flags)
    if (!flags.dump && !json) {
      if (!process.stdin.isTTY || !process.stdout.isTTY)
        throw new UsageError(
          'tsq events shows its live view in a terminal only; in scripts, print events with --dump (lines) or --json (one object per line)',
        )
      await runEventMonitor({
        brokerUrl,
        transportSettings,
        version: this.config.version,
        input: process.stdin,
        output: process.stdout,
        warn: (line) => process.stderr.write(`${line}\n`),
      })
      return
    }
    await runEventDump({
      brokerUrl,
      transportSettings,
      json,
      count: flags.count,
      timeoutSeconds: flags.timeout,
      write: (line) => process.stdout.write(`${line}\n`),
      warn: (line) => process.stderr.write(`${line}\n`),
    })
  }

  /** The events were the output, one per line; there is no document to add at the end. */
  protected override logJson(): void {}
}
