import { Flags } from '@oclif/core'
import { withTransport } from '../../client/index.js'
import { loadApp, resolveAppModule } from '../../app/index.js'
import { findServices, serviceStatus, type ServiceStatus } from '../../bus/index.js'
import { TsqCommand } from '../../cli/base-command.js'

/** --service, shared by the bus and archive commands. */
export const serviceFlag = Flags.string({
  char: 's',
  description: 'A service by name (repeatable); a Python service, which tsq workers never recorded, must be named.',
  multiple: true,
})

/** The app module of -A, when it is given. */
export async function appOf(spec: string | undefined): Promise<unknown> {
  return spec ? loadApp(resolveAppModule(spec)) : undefined
}

function count(n: number | null): string {
  return n === null ? '-' : String(n)
}

export default class BusLs extends TsqCommand<{ services: ServiceStatus[] }> {
  static summary = "Every service's handler queues (depth, consumers), the events waiting at each retry step, and the archive's size."
  static description =
    'Services come from what tsq workers recorded when they started, from -A (an events app module), and from --service. ' +
    "On RabbitMQ the figures are the queues' own; on Redis and the file broker the retry steps and the archive are parking lots of the same names."
  static flags = { service: serviceFlag }
  static examples = ['<%= config.bin %> bus ls', '<%= config.bin %> bus ls --service billing --json']

  async run(): Promise<{ services: ServiceStatus[] }> {
    const { flags } = await this.parse(BusLs)
    const config = await this.clientConfig(flags)
    const app = await appOf(flags.app)
    const services = await withTransport(
      config.brokerUrl,
      async (transport) => {
        const known = await findServices(transport, { names: flags.service, app })
        const out: ServiceStatus[] = []
        for (const k of known) out.push(await serviceStatus(transport, k.record, k.recorded))
        return out
      },
      config.transportSettings,
    )
    if (!this.jsonEnabled()) {
      if (services.length === 0) {
        this.log('no services (none recorded by a tsq worker yet; name one with --service)')
        return { services }
      }
      const { default: Table } = await import('cli-table3')
      const table = new Table({
        head: ['service', 'queue', 'waits', 'ready', 'consumers'].map((h) => this.color.bold(h)),
        style: { head: [], border: [] },
        chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
      })
      for (const s of services) {
        let first = true
        const row = (cells: string[]) => {
          table.push([first ? s.service : '', ...cells])
          first = false
        }
        if (!s.recorded) row([this.color.dim('(handlers unknown: no tsq worker recorded this service)'), '', '', ''])
        for (const h of s.handlers) row([h.queue, '', h.messages === null ? 'absent' : String(h.messages), count(h.consumers)])
        for (const r of s.retries) row([r.name, `${r.delaySeconds} s`, count(r.messages), ''])
        if (s.archive) row([s.archive.name, 'archive', count(s.archive.messages), ''])
      }
      this.log(table.toString())
    }
    return { services }
  }
}
