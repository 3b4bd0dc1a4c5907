import { broadcast } from '../../client/index.js'
import { TsqCommand } from '../../cli/base-command.js'
import { floatFlag } from '../../cli/flags/oclif-flags.js'
import { poolsFromStats, workersDot, type WorkerPool } from '../../cli/render/graphs.js'
import { maskUrl } from '../../transport/index.js'

export default class GraphWorkers extends TsqCommand<{ broker: string; backend: string | null; workers: WorkerPool[] }> {
  static summary =
    "The broker, the result backend, each live worker and its pool's processes or threads, as Graphviz dot text (Celery's `graph workers`)."
  static description =
    "From the live replies of `inspect stats`. As Celery's, more than 4 workers or 3 pool slots are abbreviated (the first ones, a count, the last). Render it with `dot -Tsvg`."
  static flags = {
    timeout: floatFlag({ char: 't', description: "Seconds to wait for the workers' replies.", default: 1, min: 0 }),
  }
  static examples = ['<%= config.bin %> -b amqp://guest:guest@127.0.0.1// graph workers | dot -Tsvg > workers.svg']

  async run() {
    const { flags } = await this.parse(GraphWorkers)
    const config = await this.clientConfig(flags)
    const replies = await broadcast('stats', {
      brokerUrl: config.brokerUrl,
      transportSettings: config.transportSettings,
      timeout: flags.timeout,
    })
    const graph = {
      broker: maskUrl(config.brokerUrl),
      backend: config.resultBackend ? maskUrl(config.resultBackend) : null,
      workers: poolsFromStats(replies),
    }
    if (!this.jsonEnabled()) process.stdout.write(workersDot(graph))
    return graph
  }
}
