import { Args } from '@oclif/core'
import { withTransport } from '../../client/index.js'
import { listArchive, ArchivedEventNotFoundError, type ArchivedEvent, findServices } from '../../bus/index.js'
import { TsqCommand } from '../../cli/base-command.js'
import { UsageError } from '../../cli/errors.js'
import { appOf, serviceFlag } from '../bus/ls.js'

export default class ArchiveShow extends TsqCommand<ArchivedEvent[]> {
  static summary = 'Show an archived event: its args and kwargs, and the error and traceback of its last failure.'
  static description =
    'Without --service, every service tsq workers recorded is searched. An id not in the archive is one line and exit 64.'
  static args = { id: Args.string({ required: true, description: "the event's id (tsq archive ls)" }) }
  static flags = { service: serviceFlag }
  static examples = ['<%= config.bin %> archive show 6f1c…', '<%= config.bin %> archive show 6f1c… --service billing --json']

  async run(): Promise<ArchivedEvent[]> {
    const { args, flags } = await this.parse(ArchiveShow)
    const config = await this.clientConfig(flags)
    const app = await appOf(flags.app)
    const found = await withTransport(
      config.brokerUrl,
      async (transport) => {
        const services = await findServices(transport, { names: flags.service, app, all: !flags.service?.length })
        if (services.length === 0) throw new UsageError('no service to search: name one with --service')
        const out: ArchivedEvent[] = []
        for (const s of services)
          out.push(
            ...(await listArchive(transport, s.record.service, { ttlMs: s.record.settings.archiveTtlMs })).filter((e) => e.id === args.id),
          )
        if (out.length === 0) throw new ArchivedEventNotFoundError([args.id], services.map((s) => s.record.service).join(', '))
        return out
      },
      config.transportSettings,
    )
    if (!this.jsonEnabled()) {
      const blocks = found.map((e) =>
        [
          `${this.color.bold('id:')}            ${e.id}`,
          `${this.color.bold('service:')}       ${e.service}`,
          `${this.color.bold('event:')}         ${e.event}`,
          `${this.color.bold('args:')}          ${JSON.stringify(e.args)}`,
          `${this.color.bold('kwargs:')}        ${JSON.stringify(e.kwargs)}`,
          `${this.color.bold('retries:')}       ${e.retries ?? '-'}`,
          `${this.color.bold('first failure:')} ${e.firstFailure ?? '-'}`,
          `${this.color.bold('archived at:')}   ${e.archivedAt ?? '-'}`,
          `${this.color.bold('reason:')}        ${e.reason ?? '-'}`,
          `${this.color.bold('origin:')}        ${e.origin ?? '-'}`,
          `${this.color.bold('last error:')}    ${e.lastError ?? '-'}`,
          `${this.color.bold('traceback:')}${e.traceback ? `\n${e.traceback}` : ' -'}`,
        ].join('\n'),
      )
      this.log(blocks.join('\n\n'))
    }
    return found
  }
}
