import { Args, Flags } from '@oclif/core'
import { withTransport, sendTask } from '../client/index.js'
import { routedSend } from '../config/index.js'
import { TsqCommand } from '../cli/base-command.js'
import { floatFlag, integerFlag } from '../cli/flags/oclif-flags.js'
import { InvalidValueError, optionLabel } from '../cli/errors.js'
import { pyRepr } from '../protocol/index.js'

/** `-a/--args` and `-k/--kwargs`, in the words of Celery's JSON_ARRAY and JSON_OBJECT types. */
function parseJson(label: string, raw: string, want: 'array' | 'object'): unknown {
  let value: unknown
  try {
    value = JSON.parse(raw)
  } catch (error) {
    throw new InvalidValueError(label, `${pyRepr(raw)} is not valid JSON: ${(error as Error).message}`)
  }
  const ok = want === 'array' ? Array.isArray(value) : value !== null && typeof value === 'object' && !Array.isArray(value)
  if (!ok) throw new InvalidValueError(label, `${raw} was not an ${want}`)
  return value
}

export default class Call extends TsqCommand<{ id: string }> {
  static summary = 'Send a task by name and print its id.'
  static args = { task: Args.string({ required: true, description: 'registered task name, e.g. proj.add' }) }
  static flags = {
    args: Flags.string({ char: 'a', description: 'Positional arguments as a JSON array.', default: '[]' }),
    kwargs: Flags.string({ char: 'k', description: 'Keyword arguments as a JSON object.', default: '{}' }),
    queue: Flags.string({
      char: 'Q',
      description: "Queue to send to (default: the task's route in the app's task_routes, else its default queue, celery unless set).",
    }),
    exchange: Flags.string({ description: 'Exchange to publish to (with --routing-key).' }),
    'routing-key': Flags.string({ description: 'Routing key, with --exchange.' }),
    countdown: floatFlag({ description: 'Run no earlier than this many seconds from now.' }),
    eta: Flags.string({ description: 'Run no earlier than this ISO-8601 time.' }),
    expires: Flags.string({ description: 'Seconds from now, or an ISO-8601 time, after which the task is revoked.' }),
    priority: integerFlag({ description: 'Message priority 0-9.', min: 0, max: 255 }),
    'time-limit': floatFlag({ description: 'Hard time limit in seconds.' }),
    'soft-time-limit': floatFlag({ description: 'Soft time limit in seconds.' }),
    timeout: floatFlag({
      description:
        'Seconds the broker has to confirm the send (task_publish_timeout; 0: wait). Past them it fails (exit 69: the message may still be delivered; 75: it was not sent) instead of waiting out a blocked broker.',
      min: 0,
    }),
  }
  static examples = [
    "<%= config.bin %> call proj.add --args '[2, 3]'",
    '<%= config.bin %> call proj.report --kwargs \'{"day": "mon"}\' --queue reports --countdown 10',
  ]

  async run(): Promise<{ id: string }> {
    const { args, flags } = await this.parse(Call)
    const config = await this.clientConfig(flags)
    const taskArgs = parseJson(optionLabel('args', 'a'), flags.args, 'array') as unknown[]
    const kwargs = parseJson(optionLabel('kwargs', 'k'), flags.kwargs, 'object') as Record<string, unknown>
    if (flags.eta !== undefined && Number.isNaN(Date.parse(flags.eta)))
      throw new InvalidValueError(optionLabel('eta'), `${pyRepr(flags.eta)} is not an ISO-8601 time.`)
    let expires: number | string | undefined
    if (flags.expires !== undefined) {
      const n = Number(flags.expires)
      if (Number.isFinite(n) && flags.expires.trim() !== '') expires = n
      else if (!Number.isNaN(Date.parse(flags.expires))) expires = flags.expires
      else throw new InvalidValueError(optionLabel('expires'), `${pyRepr(flags.expires)} is neither seconds nor an ISO-8601 time.`)
    }
    // What the flags name wins; the route (task_routes, else the default queue) fills in the rest, as Celery's router does.
    const destination = routedSend({ queue: flags.queue, exchange: flags.exchange, routingKey: flags['routing-key'] }, () =>
      config.routeFor(args.task),
    )
    const timeout = flags.timeout ?? config.publishTimeout
    const id = await withTransport(
      config.brokerUrl,
      (transport) => {
        // A RabbitMQ alarm holds the send: said at once, not waited out in silence.
        transport.on('connection:blocked', (reason) =>
          process.stderr.write(
            `tsq call: the broker blocks publishing (${reason}); waiting${timeout ? ` up to ${timeout} s` : ' until it clears (--timeout gives up sooner)'}\n`,
          ),
        )
        return sendTask(
          transport,
          args.task,
          {
            args: taskArgs,
            kwargs,
            ...destination,
            resolveQueue: (name) => config.resolveQueue(name),
            deliveryMode: config.deliveryMode(),
            countdown: flags.countdown,
            eta: flags.eta,
            expires,
            priority: flags.priority,
            timeLimit: flags['time-limit'] ?? null,
            softTimeLimit: flags['soft-time-limit'] ?? null,
            timeout: timeout || null,
          },
          undefined,
          config.taskEncoder?.(),
        )
      },
      config.transportSettings,
    )
    if (!this.jsonEnabled()) this.log(id)
    return { id }
  }
}
