// What `tsq worker` does between parsing flags and exiting: load the module,
// print the banner, start the worker, turn signals into shutdown phases.
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { banner } from './banner.js'
import { loadApp, resolveAppModule } from './load-app.js'
import { Logger, parseLevel } from './logger.js'
import { acquirePidfile } from './pidfile.js'
import type { PoolKind } from './pools/pool.js'
import { Worker } from './worker.js'

export interface RunWorkerOptions {
  appSpec: string
  broker: string | undefined
  resultBackend: string | undefined
  nodename: string
  concurrency: number
  pool: PoolKind
  queues: string[]
  excludeQueues: string[]
  loglevel: string
  logfile: string | null
  logfileTemplate: string | null
  pidfile: string | null
  taskEvents: boolean
  prefetchMultiplier: number
  heartbeat: boolean
  heartbeatInterval: number
  mingle: boolean
  purge: boolean
  timeLimit: number | null
  softTimeLimit: number | null
  maxTasksPerChild: number | undefined
  acksLate: boolean
  quiet: boolean
  version: string
}

/** Resolves with the exit code. */
export async function runWorker(o: RunWorkerOptions): Promise<number> {
  if (o.logfile) mkdirSync(dirname(o.logfile), { recursive: true })
  const log = new Logger(parseLevel(o.loglevel), o.logfile)
  const modulePath = resolveAppModule(o.appSpec)
  const app = await loadApp(modulePath)
  app.configure({ broker: o.broker, resultBackend: o.resultBackend })
  const config = app.config
  const releasePidfile = o.pidfile ? acquirePidfile(o.pidfile, (m) => log.warning(m)) : () => undefined
  process.env.TSQ_VERSION = o.version
  const worker = new Worker({
    app,
    modulePath,
    brokerUrl: config.brokerUrl,
    resultBackend: config.resultBackend,
    hostname: o.nodename,
    concurrency: o.concurrency,
    pool: o.pool,
    queues: o.queues,
    excludeQueues: o.excludeQueues,
    prefetchMultiplier: o.prefetchMultiplier,
    taskEvents: o.taskEvents,
    heartbeat: o.heartbeat,
    heartbeatInterval: o.heartbeatInterval,
    mingle: o.mingle,
    purge: o.purge,
    timeLimit: o.timeLimit,
    softTimeLimit: o.softTimeLimit,
    acksLate: o.acksLate,
    logfile: o.logfileTemplate,
    maxTasksPerChild: o.maxTasksPerChild,
    log,
  })
  if (!o.quiet) {
    process.stdout.write(
      banner({
        nodename: o.nodename,
        version: o.version,
        app: app.name,
        brokerUrl: config.brokerUrl,
        resultBackend: config.resultBackend,
        concurrency: o.concurrency,
        pool: o.pool,
        taskEvents: o.taskEvents,
        queues: o.queues.filter((q) => !o.excludeQueues.includes(q)).map((q) => ({ name: q, exchange: q, exchangeType: 'direct', routingKey: q })),
        tasks: [...app.tasks.keys()],
      }) + '\n',
    )
  }
  installSignals(worker, log)
  try {
    await worker.start()
  } catch (error) {
    releasePidfile()
    await worker.shutdown('cold', 'start failed').catch(() => undefined)
    throw error
  }
  await worker.stopped
  releasePidfile()
  return 0
}

/** TERM and the first INT: warm; QUIT and INT during warm: cold; INT during cold: hard. */
function installSignals(worker: Worker, log: Logger): void {
  const remap = process.env.REMAP_SIGTERM === 'SIGQUIT'
  const warm = (signal: string) => {
    if (worker.state === 'WARM_SHUTDOWN' || worker.state === 'COLD_SHUTDOWN') return false
    log.console(`\nworker: Warm shutdown (MainProcess)${signal === 'SIGINT' ? '\nworker: Hitting Ctrl+C again will terminate all running tasks!' : ''}`)
    void worker.shutdown('warm', signal)
    return true
  }
  const cold = (signal: string) => {
    if (worker.state === 'COLD_SHUTDOWN') return
    log.console('\nworker: Cold shutdown (MainProcess)')
    void worker.shutdown('cold', signal)
  }
  process.on('SIGTERM', () => (remap ? cold('SIGTERM') : warm('SIGTERM')))
  process.on('SIGQUIT', () => cold('SIGQUIT'))
  process.on('SIGINT', () => {
    if (worker.state === 'COLD_SHUTDOWN') {
      log.console('worker: Hard shutdown (MainProcess)')
      process.exit(1)
    }
    if (!warm('SIGINT')) cold('SIGINT')
  })
}
