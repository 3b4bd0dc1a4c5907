// `tsq worker --health-port`: the process's health server (process/health)
// told what a worker's readiness is, and given the queue load figures for
// its /metrics and /load, sampled on the worker's own connection when
// scraped (at most once per LOAD_REFRESH_MS; a scrape answers at once with the last).
import { HealthServer, type HealthOptions } from '../process/health/index.js'
import { queueLoadJson, queueLoadMetrics, sampleQueueLoad } from '../client/index.js'
import type { Worker } from './worker.js'

/** The load broadcasts reach every worker: a scrape loop faster than this is served the last sample. */
const LOAD_REFRESH_MS = 5000

/** Why the worker is not ready, or null when it is: started and consuming, the broker connection up. */
export function workerUnreadiness(state: string, connected: boolean): string | null {
  if (state === 'CREATED' || state === 'STARTING') return 'starting: not consuming yet'
  if (state !== 'RUNNING') return `shutting down (${state.toLowerCase().replace('_', ' ')})`
  return connected ? null : 'the broker connection is lost; reconnecting'
}

export interface WorkerHealth {
  readonly port: number
  close(): Promise<void>
}

export async function startWorkerHealth(
  worker: Worker,
  o: HealthOptions & { queues: () => string[]; log: (line: string) => void },
): Promise<WorkerHealth> {
  const server = await HealthServer.start(o)
  let sampledAt = 0
  let sampling = false
  const refresh = (): void => {
    const transport = worker.probeView.transport
    if (sampling || !transport || worker.state !== 'RUNNING' || Date.now() - sampledAt < LOAD_REFRESH_MS) return
    sampling = true
    sampledAt = Date.now()
    void sampleQueueLoad(transport, { queues: o.queues() })
      .then((loads) => server.publishMetrics(queueLoadMetrics(loads), queueLoadJson(loads)))
      .catch((error: Error) => o.log(`health: the queue load sample failed: ${error.message}`))
      .finally(() => (sampling = false))
  }
  server.onScrape(refresh)
  server.pollReadiness(() => {
    const why = workerUnreadiness(worker.state, worker.probeView.connected)
    // The first figures as soon as the worker consumes, so the first scrape has some.
    if (why === null && sampledAt === 0) refresh()
    return why
  })
  return {
    port: server.port,
    close: () => server.close(),
  }
}

/** The flags as the command parsed them. */
export interface HealthFlags {
  port?: string
  stuckAfter?: number
}

/**
 * The flags, else the app's worker_health_port and worker_health_stuck_after;
 * null when no port is set. A --watch worker serves none: its old and new
 * processes would both want the port.
 */
export function healthOptionsOf(
  flags: HealthFlags | undefined,
  conf: Record<string, unknown>,
  watch: boolean,
  warn: (line: string) => void,
): HealthOptions | null {
  const port = flags?.port ?? conf.worker_health_port
  if (port === undefined || port === null || port === '') return null
  if (watch) {
    warn('--health-port is not served under --watch (the old and new worker would share the port)')
    return null
  }
  const stuck = flags?.stuckAfter ?? conf.worker_health_stuck_after
  return { listen: port as string | number, stuckAfterS: typeof stuck === 'number' && stuck > 0 ? stuck : undefined }
}
