import { withTransport } from '../../client/index.js'
import { busDescriptorOf, recordService, declareTopology, usesParking, busTopology } from '../../bus/index.js'
import { TsqCommand } from '../../cli/base-command.js'
import { UsageError } from '../../cli/errors.js'
import { appOf } from './ls.js'

export interface DeclareResult {
  service: string
  exchanges: string[]
  queues: string[]
}

export default class BusDeclare extends TsqCommand<DeclareResult> {
  static summary = "Declare an events app's whole topology (exchanges, handler queues, retry steps, archive) without starting a worker."
  static description =
    "Idempotent, as a worker declares it at start. Run it in a deploy step, so that events fired before the service's first worker starts wait in its handler queues instead of being dropped for want of a queue. " +
    'A queue that exists with other arguments is one line naming both argument sets (exit 64).'
  static examples = ['<%= config.bin %> bus declare -A ./shipping.js']

  async run(): Promise<DeclareResult> {
    const { flags } = await this.parse(BusDeclare)
    if (!flags.app) throw new UsageError('tsq bus declare needs -A, the events app module whose topology to declare')
    const config = await this.clientConfig(flags)
    const app = await appOf(flags.app)
    const bus = busDescriptorOf(app)
    if (!bus) throw new UsageError(`${flags.app} exports no events app (createEventsApp)`)
    const result = await withTransport(
      config.brokerUrl,
      async (transport) => {
        const topology = busTopology(bus.service, bus.handlers(), bus.settings, { steps: !usesParking(transport) })
        await declareTopology(transport, topology)
        await recordService(transport, { service: bus.service, events: bus.handlers(), settings: bus.settings })
        return { service: bus.service, exchanges: topology.exchanges.map((e) => e.name), queues: topology.queues.map((q) => q.name) }
      },
      config.transportSettings,
    )
    if (!this.jsonEnabled() && !flags.quiet)
      this.log(
        `${result.service}: declared ${result.exchanges.length} exchanges and ${result.queues.length} queues (${result.queues.join(', ')})`,
      )
    return result
  }
}
