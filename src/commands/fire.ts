import { Args, Flags } from '@oclif/core'
import { withTransport } from '../client/index.js'
import { loadApp, resolveAppModule } from '../app/index.js'
import { busDescriptorOf, fireEvent, type EventsApp, checkEventName } from '../bus/index.js'
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

export interface FireResult {
  id: string
  event: string
}

export default class Fire extends TsqCommand<FireResult> {
  static summary = 'Fire an event to the `events` exchange; exit 0 only once the broker has it (publisher confirms).'
  static description =
    'The event is a Celery task message named as the event, routed by its name to every service that handles it (their queues `<service>.<event>`), as a Python service fires it with send_task(E, args, routing_key=E). ' +
    "With -A, the module's events app fires it, declaring its own service's topology first; its event functions' validation is not run."
  static args = { event: Args.string({ required: true, description: 'event name, e.g. billing.invoice.paid' }) }
  static flags = {
    args: Flags.string({ char: 'a', description: 'Positional arguments as a JSON array.', default: '[]' }),
    kwargs: Flags.string({ char: 'k', description: 'Keyword arguments as a JSON object.', default: '{}' }),
  }
  static examples = [
    `<%= config.bin %> fire billing.invoice.paid --args '[{"id": 42, "total": 9.5}]'`,
    `<%= config.bin %> fire shipping.parcel.sent -A ./shipping.js --kwargs '{"parcel": 7}' --json`,
  ]

  async run(): Promise<FireResult> {
    const { args, flags } = await this.parse(Fire)
    const eventArgs = parseJson('--args', flags.args, 'array') as unknown[]
    const kwargs = parseJson('--kwargs', flags.kwargs, 'object') as Record<string, unknown>
    try {
      checkEventName(args.event, 'tsq fire')
    } catch (error) {
      throw new UsageError((error as Error).message)
    }
    const config = await this.clientConfig(flags)
    let id: string
    const app = flags.app ? await loadApp(resolveAppModule(flags.app)) : undefined
    if (app && busDescriptorOf(app)) {
      const events = app as EventsApp
      try {
        id = await events.fire(args.event, eventArgs, kwargs)
      } finally {
        await events.close()
      }
    } else {
      id = await withTransport(
        config.brokerUrl,
        (transport) => fireEvent(transport, args.event, eventArgs, kwargs),
        config.transportSettings,
      )
    }
    if (!this.jsonEnabled() && !flags.quiet) this.log(id)
    return { id, event: args.event }
  }
}
