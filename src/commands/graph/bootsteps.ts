import { TsqCommand } from '../../cli/base-command.js'
import { bootstepsDot } from '../../cli/render/graphs.js'
import { bootOrder } from '../../worker/bootsteps.js'

export default class GraphBootsteps extends TsqCommand<
  Array<{ name: string; requires: string[]; conditional: boolean; description: string }>
> {
  static summary = "The worker's components and what each depends on, as Graphviz dot text (Celery's `graph bootsteps`)."
  static description =
    'Drawn from the list the worker follows when it starts (src/worker/bootsteps.ts), in the order it starts them; steps only some workers run (a result backend, --autoscale, --statedb, mingle, gossip, heartbeats) are marked ∘, as Celery marks them. Render it with `dot -Tsvg`.'
  static examples = ['<%= config.bin %> graph bootsteps | dot -Tsvg > bootsteps.svg']

  async run() {
    await this.parse(GraphBootsteps)
    const steps = bootOrder()
    if (!this.jsonEnabled()) process.stdout.write(bootstepsDot(steps))
    return steps.map((s) => ({ name: s.name, requires: [...s.requires], conditional: !!s.when, description: s.description }))
  }
}
