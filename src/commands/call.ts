import { Args, Flags } from '@oclif/core'
import { withTransport } from '../app/connection.js'
import { sendTask } from '../app/send-task.js'
import { TsqCommand } from '../cli/base-command.js'
import { UsageError } from '../cli/errors.js'

function parseJson(flag: string, raw: string, want: 'array' | 'object'): unknown {
  let value: unknown
  try {
    value = JSON.parse(raw)
  } catch (error) {
    throw new UsageError(`${flag} is not valid JSON: ${(error as Error).message}`)
  }
  const ok = want === 'array' ? Array.isArray(value) : value !== null && typeof value === 'object' && !Array.isArray(value)
  if (!ok) throw new UsageError(`${flag} must be a JSON ${want}, got ${raw}`)
  return value
}

function parseSeconds(flag: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined
  const n = Number(raw)
  if (raw.trim() === '' || !Number.isFinite(n)) throw new UsageError(`${flag} must be a number of seconds, got ${JSON.stringify(raw)}`)
  return n
}

export default class Call extends TsqCommand<{ id: string }> {
  static summary = 'Send a task by name and print its id.'
  static args = { task: Args.string({ required: true, description: 'registered task name, e.g. proj.add' }) }
  static flags = {
    args: Flags.string({ char: 'a', description: 'Positional arguments as a JSON array.', default: '[]' }),
    kwargs: Flags.string({ char: 'k', description: 'Keyword arguments as a JSON object.', default: '{}' }),
    queue: Flags.string({ char: 'Q', description: 'Queue to send to (default celery).' }),
    exchange: Flags.string({ description: 'Exchange to publish to (with --routing-key).' }),
    'routing-key': Flags.string({ description: 'Routing key, with --exchange.' }),
    countdown: Flags.string({ description: 'Run no earlier than this many seconds from now.' }),
    eta: Flags.string({ description: 'Run no earlier than this ISO-8601 time.' }),
    expires: Flags.string({ description: 'Seconds from now, or an ISO-8601 time, after which the task is revoked.' }),
    priority: Flags.integer({ description: 'Message priority 0-9.', min: 0, max: 255 }),
    'time-limit': Flags.string({ description: 'Hard time limit in seconds.' }),
    'soft-time-limit': Flags.string({ description: 'Soft time limit in seconds.' }),
  }
  static examples = [
    "<%= config.bin %> call proj.add --args '[2, 3]'",
    "<%= config.bin %> call proj.report --kwargs '{\"day\": \"mon\"}' --queue reports --countdown 10",
  ]

  async run(): Promise<{ id: string }> {
    const { args, flags } = await this.parse(Call)
    const config = this.config_(flags)
    const taskArgs = parseJson('--args', flags.args, 'array') as unknown[]
    const kwargs = parseJson('--kwargs', flags.kwargs, 'object') as Record<string, unknown>
    if (flags.eta !== undefined && Number.isNaN(Date.parse(flags.eta))) throw new UsageError(`--eta must be an ISO-8601 time, got ${JSON.stringify(flags.eta)}`)
    let expires: number | string | undefined
    if (flags.expires !== undefined) {
      const n = Number(flags.expires)
      if (Number.isFinite(n) && flags.expires.trim() !== '') expires = n
      else if (!Number.isNaN(Date.parse(flags.expires))) expires = flags.expires
      else throw new UsageError(`--expires must be seconds or an ISO-8601 time, got ${JSON.stringify(flags.expires)}`)
    }
    const id = await withTransport(config.brokerUrl, (transport) =>
      sendTask(transport, args.task, {
        args: taskArgs,
        kwargs,
        queue: flags.queue,
        exchange: flags.exchange,
        routingKey: flags['routing-key'],
        countdown: parseSeconds('--countdown', flags.countdown),
        eta: flags.eta,
        expires,
        priority: flags.priority,
        timeLimit: parseSeconds('--time-limit', flags['time-limit']) ?? null,
        softTimeLimit: parseSeconds('--soft-time-limit', flags['soft-time-limit']) ?? null,
      }),
    )
    if (!this.jsonEnabled()) this.log(id)
    return { id }
  }
}
