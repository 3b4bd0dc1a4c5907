import { Args, Flags } from '@oclif/core'
import { withTransport } from '../../client/index.js'
import {
  listArchive,
  replayArchive,
  type ReplayResult,
  ArchivedEventNotFoundError,
  type ArchivedEvent,
  findServices,
} from '../../bus/index.js'
import { TsqCommand } from '../../cli/base-command.js'
import { UsageError } from '../../cli/errors.js'
import { appOf, serviceFlag } from '../bus/ls.js'

export interface ReplayOutput {
  replayed: ArchivedEvent[]
  duplicates: number
}

export default class ArchiveReplay extends TsqCommand<ReplayOutput> {
  static summary = 'Send archived events back to their handler queues with their retry count reset (after the fix is released).'
  static description =
    'Each event is published to its handler queue (confirmed) before it leaves the archive: a replay killed half-way loses nothing ' +
    '(an event may then be both replayed and still archived). An id not in the archive is one line and exit 64, before anything is sent. ' +
    '--all needs --service.'
  static strict = false
  static args = { ids: Args.string({ description: "archived events' ids (tsq archive ls)" }) }
  static flags = {
    service: serviceFlag,
    all: Flags.boolean({ description: "Every archived event of the service (with --event: that event's)." }),
    event: Flags.string({ char: 'e', description: 'Only this event.' }),
  }
  static examples = [
    '<%= config.bin %> archive replay 6f1c… 9a2b…',
    '<%= config.bin %> archive replay --all --service billing --event shipping.parcel.sent',
  ]

  async run(): Promise<ReplayOutput> {
    const { argv, flags } = await this.parse(ArchiveReplay)
    const ids = (argv as string[]).filter(Boolean)
    if (flags.all && ids.length) throw new UsageError('give ids or --all, not both')
    if (!flags.all && ids.length === 0) throw new UsageError('give the ids of the events to replay, or --all (with --service)')
    if (flags.all && !flags.service?.length) throw new UsageError('--all needs --service: the service whose archive to replay')
    const config = await this.clientConfig(flags)
    const app = await appOf(flags.app)
    const result = await withTransport(
      config.brokerUrl,
      async (transport) => {
        const services = await findServices(transport, { names: flags.service, app, all: !flags.service?.length })
        if (services.length === 0) throw new UsageError('no service to search: name one with --service')
        const total: ReplayResult = { replayed: [], duplicates: 0 }
        const progress = (e: ArchivedEvent) => {
          if (!this.jsonEnabled() && !flags.quiet) this.log(`replayed ${e.id} (${e.event}) to ${e.service}.${e.event}`)
        }
        if (flags.all) {
          for (const s of services) {
            const r = await replayArchive(
              transport,
              s.record.service,
              { all: true, event: flags.event, ttlMs: s.record.settings.archiveTtlMs },
              progress,
            )
            total.replayed.push(...r.replayed)
            total.duplicates += r.duplicates
          }
          return total
        }
        // Which service holds each id, found before anything is sent.
        const where = new Map<string, string[]>()
        for (const s of services) {
          const held = new Set(
            (await listArchive(transport, s.record.service, { event: flags.event, ttlMs: s.record.settings.archiveTtlMs })).map(
              (e) => e.id,
            ),
          )
          const mine = ids.filter((id) => held.has(id))
          if (mine.length) where.set(s.record.service, mine)
        }
        const missing = ids.filter((id) => ![...where.values()].some((list) => list.includes(id)))
        if (missing.length) throw new ArchivedEventNotFoundError(missing, services.map((s) => s.record.service).join(', '))
        for (const [service, mine] of where) {
          const s = services.find((x) => x.record.service === service)!
          const r = await replayArchive(
            transport,
            service,
            { ids: mine, event: flags.event, ttlMs: s.record.settings.archiveTtlMs },
            progress,
          )
          total.replayed.push(...r.replayed)
          total.duplicates += r.duplicates
        }
        return total
      },
      config.transportSettings,
    )
    if (!this.jsonEnabled() && !flags.quiet)
      this.log(
        `${result.replayed.length} event(s) replayed${result.duplicates ? `, ${result.duplicates} duplicate archived cop${result.duplicates === 1 ? 'y' : 'ies'} removed` : ''}.`,
      )
    return result
  }
}
