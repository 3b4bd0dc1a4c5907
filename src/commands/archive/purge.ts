import { Flags } from '@oclif/core'
import { withTransport } from '../../client/index.js'
import { purgeArchive, findServices } from '../../bus/index.js'
import { TsqCommand } from '../../cli/base-command.js'
import { UsageError } from '../../cli/errors.js'
import { appOf, serviceFlag } from '../bus/ls.js'

export interface ArchivePurgeResult {
  purged: number
  services: Record<string, number>
}

export default class ArchivePurge extends TsqCommand<ArchivePurgeResult> {
  static summary = "Remove archived events for good: a service's whole archive, or one event's. There is no undo."
  static description = 'Asks on a terminal; in a script (stdin not a terminal) -f is required.'
  static flags = {
    service: serviceFlag,
    event: Flags.string({ char: 'e', description: 'Only this event.' }),
    force: Flags.boolean({ char: 'f', description: 'Do not ask (required when stdin is not a terminal).' }),
  }
  static examples = [
    '<%= config.bin %> archive purge --service billing',
    '<%= config.bin %> archive purge -s billing --event shipping.parcel.sent -f',
  ]

  async run(): Promise<ArchivePurgeResult> {
    const { flags } = await this.parse(ArchivePurge)
    if (!flags.service?.length && !flags.app) throw new UsageError('name the service whose archive to purge with --service (or -A)')
    if (!flags.force) {
      if (!process.stdin.isTTY) throw new UsageError('refusing to purge without confirmation: stdin is not a terminal, pass -f/--force')
      const { confirm } = await import('@inquirer/prompts')
      const what = `${flags.event ? `the archived ${flags.event} events` : 'every archived event'} of ${flags.service?.join(', ') ?? flags.app}`
      const sure = await confirm({ message: `Remove ${what}? There is no undo.`, default: false })
      if (!sure) return { purged: 0, services: {} }
    }
    const config = await this.clientConfig(flags)
    const app = await appOf(flags.app)
    const services = await withTransport(
      config.brokerUrl,
      async (transport) => {
        const out: Record<string, number> = {}
        for (const s of await findServices(transport, { names: flags.service, app }))
          out[s.record.service] = await purgeArchive(transport, s.record.service, {
            event: flags.event,
            ttlMs: s.record.settings.archiveTtlMs,
          })
        return out
      },
      config.transportSettings,
    )
    const purged = Object.values(services).reduce((a, b) => a + b, 0)
    if (!this.jsonEnabled() && !flags.quiet)
      this.log(
        `Purged ${purged} archived event${purged === 1 ? '' : 's'} (${Object.entries(services)
          .map(([s, n]) => `${s}: ${n}`)
          .join(', ')}).`,
      )
    return { purged, services }
  }
}
