import { Args } from '@oclif/core'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { AMQP_COMMAND_NAMES, amqpUsage, parseAmqpCommand, runAmqpCommand } from '../admin/index.js'
import { TsqCommand } from '../cli/base-command.js'
import { runAmqpRepl } from '../cli/amqp-repl.js'
import { UsageError } from '../cli/errors.js'
import { createBrokerAdmin } from '../transport/index.js'

export interface AmqpOutput {
  command?: string
  /** Celery's lines. */
  lines: string[]
  /** The same as data (queue.declare's counts, basic.get's message with its body as text or base64). */
  result?: Record<string, unknown>
  /** repl: how many commands failed. */
  failures?: number
}

export default class Amqp extends TsqCommand<AmqpOutput> {
  static summary = "AMQP administration: Celery's `amqp` commands on RabbitMQ, Redis and file://, one-shot or as a shell (repl)."
  static description = [
    `Commands: ${AMQP_COMMAND_NAMES.map(amqpUsage).join(' · ')}.`,
    "Booleans are read as Celery reads them (1/0, true/false, yes/no, y/n, on/off, t/f). Each prints Celery's lines; any error is one line and a non-zero exit (1 when the broker refused, 64 for a bad command line).",
    'With no command on a terminal, or with `repl`, an interactive shell on one connection (basic.get then basic.ack), with Tab completion and history in ~/.tsq_amqp_history (TSQ_AMQP_HISTORY). `repl` with stdin not a terminal runs the piped lines and exits 1 if any failed.',
    "On Redis and file:// the same commands act on the broker's layout (kombu's priority lists and _kombu.binding.<exchange> sets on Redis).",
  ].join('\n\n')
  static strict = false
  static args = {
    command: Args.string({ description: `One of ${AMQP_COMMAND_NAMES.join(', ')}, or repl.` }),
  }
  static examples = [
    '<%= config.bin %> -b amqp://guest:guest@127.0.0.1// amqp queue.declare images no yes',
    '<%= config.bin %> amqp basic.publish hello amq.direct images',
    '<%= config.bin %> amqp basic.get images',
    '<%= config.bin %> -b redis://127.0.0.1:6379/0 amqp repl',
  ]

  async run(): Promise<AmqpOutput> {
    const { argv, flags } = await this.parse(Amqp)
    const words = argv as string[]
    const repl = words.length === 0 || words[0] === 'repl'
    if (repl && words.length > 1) throw new UsageError(`repl takes no arguments (got ${words.slice(1).join(' ')})`)
    if (words.length === 0 && !process.stdin.isTTY)
      throw new UsageError(`Missing command: one of ${AMQP_COMMAND_NAMES.join(', ')}, or repl (stdin is not a terminal)`)
    // A bad command line is refused before any connection, as click does.
    if (!repl) parseAmqpCommand(words)
    const config = await this.clientConfig(flags)
    const quiet = flags.quiet || this.jsonEnabled()
    const say = (line: string) => {
      if (!quiet) this.log(line)
    }
    const admin = await createBrokerAdmin(config.brokerUrl, config.transportSettings)
    try {
      // Celery's own two lines, so a script reading `celery amqp` output sees the same.
      say(`-> connecting to ${admin.displayUrl}.`)
      await admin.connect()
      say('-> connected.')
      if (!repl) {
        const { lines, data } = await runAmqpCommand(admin, words)
        for (const line of lines) say(line)
        return { command: words[0]!, lines, result: data }
      }
      const json = this.jsonEnabled()
      const failures = await runAmqpRepl({
        input: process.stdin,
        output: process.stdout,
        run: async (line) => {
          const { lines, data } = await runAmqpCommand(admin, line)
          // Under --json, one document a command, so a script reads the session line by line.
          if (json) return [JSON.stringify({ command: line[0], lines, result: data })]
          return flags.quiet ? [] : lines
        },
        reportError: (err) => process.stderr.write(`ERROR: ${err.message.split('\n')[0]}\n`),
        historyFile: process.env.TSQ_AMQP_HISTORY ?? join(homedir(), '.tsq_amqp_history'),
        help: `Commands:\n  ${AMQP_COMMAND_NAMES.map(amqpUsage).join('\n  ')}\n  exit`,
      })
      if (failures > 0) process.exitCode = 1
      // Under --json the session ends with a summary document after the per-command ones.
      return { lines: [], failures }
    } finally {
      await admin.close()
    }
  }
}
