import { Flags } from '@oclif/core'
import { withTransport } from '../../client/index.js'
import { listArchive, type ArchivedEvent, findServices } from '../../bus/index.js'
import { TsqCommand } from '../../cli/base-command.js'
import { UsageError } from '../../cli/errors.js'
import { integerFlag } from '../../cli/flags/oclif-flags.js'
import { appOf, serviceFlag } from '../bus/ls.js'

/** One line of an error: the archive's list shows the start of it. */
export function short(text: string | null, width = 60): string {
  if (!text) return '-'
  const line = text.split('\n')[0]!
  return line.length > width ? `${line.slice(0, width - 1)}…` : line
}

export default class ArchiveLs extends TsqCommand<ArchivedEvent[]> {
  static summary = "List a service's archived events: id, event, first failure, retries, last error."
  static description =
    "An event goes to its service's archive when its handler has failed past its retries (or the message could not be read). " +
    "A Python service's archive is listed too; its events carry no failure notes (those columns show -). Reading the archive holds its messages for the moment it takes (RabbitMQ)."
  static flags = {
    service: serviceFlag,
    event: Flags.string({ char: 'e', description: 'Only this event.' }),
    limit: integerFlag({ char: 'l', description: 'At most this many, oldest first.', min: 1 }),
  }
  static examples = [
    '<%= config.bin %> archive ls --service billing',
    '<%= config.bin %> archive ls -s billing --event shipping.parcel.sent --limit 10 --json',
  ]

  async run(): Promise<ArchivedEvent[]> {
    const { flags } = await this.parse(ArchiveLs)
    const config = await this.clientConfig(flags)
    const app = await appOf(flags.app)
    const events = await withTransport(
      config.brokerUrl,
      async (transport) => {
        const services = await findServices(transport, { names: flags.service, app })
        if (services.length === 0)
          throw new UsageError('no service to list: name one with --service (no tsq worker has recorded one on this broker)')
        const out: ArchivedEvent[] = []
        for (const s of services) {
          const left = flags.limit === undefined ? undefined : flags.limit - out.length
          if (left !== undefined && left <= 0) break
          out.push(
            ...(await listArchive(transport, s.record.service, { event: flags.event, limit: left, ttlMs: s.record.settings.archiveTtlMs })),
          )
        }
        return out
      },
      config.transportSettings,
    )
    if (!this.jsonEnabled()) {
      if (events.length === 0) {
        this.log('no archived events')
        return events
      }
      const { default: Table } = await import('cli-table3')
      const table = new Table({
        head: ['id', 'service', 'event', 'first failure', 'retries', 'last error'].map((h) => this.color.bold(h)),
        style: { head: [], border: [] },
        chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
      })
      for (const e of events)
        table.push([
          e.id,
          e.service,
          e.event,
          e.firstFailure ?? '-',
          e.retries === null ? '-' : String(e.retries),
          short(e.lastError ?? e.reason),
        ])
      this.log(table.toString())
    }
    return events
  }
}
