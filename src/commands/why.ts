import { Args, Flags } from '@oclif/core'
import { whyTask, WHY_EXIT_CODES, type WhyAnswer } from '../client/index.js'
import { TsqCommand } from '../cli/base-command.js'
import { floatFlag } from '../cli/flags/oclif-flags.js'

const EXIT_HELP = Object.entries(
  Object.entries(WHY_EXIT_CODES).reduce<Record<number, string[]>>(
    (acc, [state, code]) => ({ ...acc, [code]: [...(acc[code] ?? []), state] }),
    {},
  ),
)
  .map(([code, states]) => `${code} ${states.join('/')}`)
  .join(', ')

export default class Why extends TsqCommand<WhyAnswer> {
  static summary = 'Say where a task is and why: finished, running, held by a worker, queued, revoked, or nowhere.'
  static description = `Asks every source at once: the result backend, the task's events, the workers (query_task, scheduled, revoked), and the broker (its place in a Redis queue; a RabbitMQ queue's depth and consumers). The first line is the answer, the lines after it the evidence. Exit status: ${EXIT_HELP}; 69 when the broker cannot be reached (docs/why.md).`
  static args = { id: Args.string({ required: true, description: 'task id' }) }
  static flags = {
    timeout: floatFlag({
      char: 't',
      description: "Seconds to wait for the workers' replies (and listen for the task's events).",
      default: 1,
      min: 0,
    }),
    queues: Flags.string({
      char: 'Q',
      description: "Comma-separated queues to look in, besides the app's default queue and those the workers consume.",
    }),
  }
  static examples = [
    '<%= config.bin %> why 1b1c... -b redis://127.0.0.1:6379/0 --result-backend redis://127.0.0.1:6379/1',
    '<%= config.bin %> why 1b1c... --json',
  ]

  async run(): Promise<WhyAnswer> {
    const { args, flags } = await this.parse(Why)
    const config = await this.clientConfig(flags)
    const queues = [config.defaultQueue, ...(flags.queues ?? '').split(',')].map((q) => q.trim()).filter(Boolean)
    const answer = await whyTask(args.id, {
      brokerUrl: config.brokerUrl,
      transportSettings: config.transportSettings,
      resultBackend: config.resultBackend,
      backendOptions: config.backendOptions,
      queues,
      timeoutS: flags.timeout,
    })
    process.exitCode = answer.exitCode
    if (this.jsonEnabled()) return answer
    this.log(this.color.bold(answer.summary))
    for (const line of answer.evidence) this.log(`  ${line}`)
    return answer
  }
}
