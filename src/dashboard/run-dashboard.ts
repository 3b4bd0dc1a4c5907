// `tsq dashboard` as a process: connect, serve, say where, stop cleanly on
// TERM or INT (state saved with --persistent, the event queue left to expire).
import { trimMemoryWhenIdle } from '../process/index.js'
import { HealthServer } from '../process/health/index.js'
import { queueLoadJson } from '../client/index.js'
import { Cluster, type ClusterOptions } from './cluster.js'
import { DashboardServer, type ServerOptions } from './server.js'

export interface RunDashboardOptions extends Omit<ClusterOptions, 'log'>, Omit<ServerOptions, 'cluster' | 'log'> {
  log: (line: string) => void
  /** --health-port and --health-stuck-after. */
  health?: { port?: string; stuckAfter?: number }
}

export interface RunningDashboard {
  url: string
  port: number
  cluster: Cluster
  server: DashboardServer
  stop(): Promise<void>
}

export async function startDashboard(o: RunDashboardOptions): Promise<RunningDashboard> {
  const cluster = new Cluster({ ...o, log: o.log })
  await cluster.start()
  const server = new DashboardServer({ ...o, cluster, log: o.log })
  let listening: { port: number; url: string }
  try {
    listening = await server.listen()
  } catch (error) {
    await cluster.stop()
    throw error
  }
  let stopping: Promise<void> | undefined
  return {
    ...listening,
    cluster,
    server,
    stop() {
      stopping ??= (async () => {
        await server.close().catch(() => undefined)
        await cluster.stop()
      })()
      return stopping
    },
  }
}

/** Runs until TERM or INT. */
export async function runDashboard(o: RunDashboardOptions): Promise<void> {
  // Before the broker connects, so /healthz answers and /readyz says "starting" meanwhile.
  const health = o.health?.port ? await HealthServer.start({ listen: o.health.port, stuckAfterS: o.health.stuckAfter }) : null
  health?.setReady(false, 'starting: connecting to the broker')
  const running = await startDashboard(o).catch(async (error: unknown) => {
    await health?.close()
    throw error
  })
  health?.pollReadiness(() => (running.cluster.connected ? null : 'the broker connection is lost; reconnecting'))
  health?.onScrape(() => {
    running.cluster.refreshLoadSoon()
    void running.cluster.metrics.text().then((text) => health.publishMetrics(text, queueLoadJson(running.cluster.loads)))
  })
  // A burst of events leaves the state's old tasks and the intake's buffers as
  // garbage spread over the heap's pages; V8 keeps those pages while the
  // process idles. A compacting GC once the events stop gives them back (the
  // whole process here, so an in-process user of startDashboard keeps its own policy).
  const stopTrimming = trimMemoryWhenIdle()
  o.log(
    `tsq dashboard: visit me at ${running.url} (broker ${running.cluster.displayUrl}, max ${o.maxTasks} tasks${o.persistent ? `, state in ${o.persistent.path}` : ''})`,
  )
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGTERM', stop)
      process.off('SIGINT', stop)
      resolve()
    }
    process.on('SIGTERM', stop)
    process.on('SIGINT', stop)
  })
  o.log('tsq dashboard: stopping')
  stopTrimming()
  await running.stop()
  await health?.close()
}
