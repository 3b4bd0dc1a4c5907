// What every route's handler is given besides its request: the cluster it
// answers about and acts on, and the server's own settings.
import type { Cluster } from './cluster.js'
import type { LiveStream } from './stream.js'

export interface DashboardContext {
  cluster: Cluster
  /** Names tasks may be applied by (the -A app's), besides those workers registered. */
  appTasks: readonly string[]
  /** --url-prefix as the pages' links need it: '' or e.g. `/flower`. */
  prefix: string
  /** The pages' live updates. */
  stream: LiveStream
}
