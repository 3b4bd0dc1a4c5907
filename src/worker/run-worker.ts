// What `tsq worker` does between parsing flags and exiting: load the module,
// print the banner, start the worker, turn signals into shutdown phases.
import { spawn } from 'node:child_process'
import { mkdirSync, openSync } from 'node:fs'
import { dirname } from 'node:path'
import { banner } from './banner.js'
import {
  CONFIG_MODULE_ENV,
  defaultAppModulePath,
  loadApp,
  preloadPackageEntry,
  prepareToImport,
  resolveAppModule,
  resolveIncludes,
} from '../app/index.js'
import { LEVELS, Logger, parseLevel, acquirePidfile } from '../process/index.js'
import { positiveSetting, annotationsFor, queueDefinition, settingsRefusals } from '../config/index.js'
import { describeTlsPlan, splitUrlList, tlsPlan } from '../transport/index.js'
import type { PoolKind } from './pools/pool.js'
import { keepYoungGenerationSmall, trimMemoryWhenIdle } from './memory-footprint.js'
import { surviveStrayErrors } from './stray-errors.js'
import { redirectConsole, redirectLevel } from './redirect-stdouts.js'
import { intentFor, nextCtrlCHint, type SignalContext } from './signals.js'
import { DEFAULT_ETA_DELAY_AFTER_S } from './task-path/task-runner.js'
import { Worker } from './worker.js'
import { BusWorker, busDescriptorOf } from '../bus/index.js'
import { consumedQueues, type WorkerOptions } from './worker-options.js'
import { availableParallelism } from 'node:os'
import { nodeFormat, escapeControl, taskLabel } from '../protocol/index.js'
import { resolveWorkerSettings, WorkerSettingError } from './worker-settings.js'
import { isSecretEnv } from './pools/slot-entry.js'
import { WatchChild } from './watch/watch-child.js'
import { healthOptionsOf, startWorkerHealth, type HealthFlags, type WorkerHealth } from './worker-health.js'
import { dropSlotsStartedAhead, startSlotsAhead } from './pools/prefork-pool.js'
import { lockSettings, type App } from '../app/index.js'
import { closeRateStores, rateUrlFor } from '../locks/index.js'

/** The worker's options that `tsq worker`'s flags give as the worker takes them (the app's conf fills or adds to some). */
type WorkerFlagOptions = Pick<
  WorkerOptions,
  | 'excludeQueues'
  | 'logfile'
  | 'heartbeat'
  | 'heartbeatInterval'
  | 'mingle'
  | 'gossip'
  | 'purge'
  | 'timeLimit'
  | 'softTimeLimit'
  | 'softShutdownTimeout'
  | 'softShutdownOnIdle'
  | 'acksLate'
  | 'autoscale'
  | 'cancelLongRunningOnLoss'
  | 'taskEvents'
  | 'maxTasksPerChild'
  | 'maxMemoryPerChild'
  | 'statedb'
>

export interface RunWorkerOptions extends WorkerFlagOptions {
  /** The task module; null runs the default app (built-in tasks only), as `celery worker` without --app. */
  appSpec: string | null
  /** `-I/--include` module specs, resolved as appSpec is. */
  includes: string[]
  broker: string | undefined
  resultBackend: string | undefined
  nodename: string
  /** -c; undefined: CELERY_WORKER_CONCURRENCY, worker_concurrency, the CPU count (worker-settings.ts). */
  concurrency?: number
  /** -P; undefined: CELERY_WORKER_POOL, worker_pool, prefork. */
  pool?: PoolKind
  /** `-Q`; empty: the app's default queue. */
  queues: string[]
  loglevel: string
  logfileTemplate: string | null
  pidfile: string | null
  /** undefined: CELERY_WORKER_PREFETCH_MULTIPLIER, worker_prefetch_multiplier, 4. */
  prefetchMultiplier?: number
  /** --without-eta-broker-delay gives false; undefined leaves it to the app's conf. */
  etaBrokerDelay?: boolean
  /** --eta-broker-delay-after, seconds; null or undefined leaves it to the app's conf. */
  etaBrokerDelayAfter?: number | null
  quiet: boolean
  version: string
  /** --health-port and --health-stuck-after; undefined leaves them to worker_health_port and worker_health_stuck_after. */
  health?: HealthFlags
  /**
   * Something to run in this process beside the worker (`-B`: the embedded
   * beat): started before the worker consumes, stopped first in its shutdown.
   */
  startCompanion?: (log: Logger, brokerUrl: string) => Promise<WorkerCompanion>
}

export interface WorkerCompanion {
  /** Resolves once it has stopped. */
  stop(): Promise<void>
}

/** Celery's worker_log_format, the line tsq's logger writes (setup_logging's `format`). */
const CELERY_LOG_FORMAT = '[%(asctime)s: %(levelname)s/%(processName)s] %(message)s'

/** Resolves with the exit code. */
export async function runWorker(o: RunWorkerOptions): Promise<number> {
  keepYoungGenerationSmall()
  if (o.logfile) mkdirSync(dirname(o.logfile), { recursive: true })
  const log = new Logger(parseLevel(o.loglevel), o.logfile)
  // Before the module loads: its top level may start timers of its own.
  surviveStrayErrors((message) => log.error(message))
  // Under `tsq worker --watch`: waits until told to load, and records what the module loads.
  const watch = WatchChild.fromEnvironment()
  if (!watch) return startWorker(o, log, null)
  await startAhead(o, watch.slotsAhead)
  await watch.loadWhenTold()
  try {
    return await startWorker(o, log, watch)
  } catch (error) {
    // The supervisor learns which files to wait for (the one that failed among them); the error ends the process.
    await watch.failed()
    throw error
  }
}

/**
 * A --watch worker waiting for a change starts what does not read the
 * module's code: tsx's loader, tsq's package entry (which the module
 * imports), and as many prefork slot processes as the running worker has. A
 * path that does not resolve is left to the load to report.
 */
async function startAhead(o: RunWorkerOptions, preforkSlots: number): Promise<void> {
  if (o.appSpec === null) return
  try {
    const paths = [resolveAppModule(o.appSpec), ...resolveIncludes(o.includes)]
    // Up to one per CPU: each waits holding its memory, and more would not start any sooner.
    if (preforkSlots > 0) startSlotsAhead(Math.min(preforkSlots, availableParallelism()), paths)
    await prepareToImport(paths[0]!)
    await preloadPackageEntry()
  } catch {
    // Reported by the load, once told to load.
  }
}

/** The --config module's path, when there is one that resolves. */
function configModulePath(): string[] {
  const spec = process.env[CONFIG_MODULE_ENV]
  if (!spec) return []
  try {
    return [resolveAppModule(spec, process.cwd(), 'the config module')]
  } catch {
    return []
  }
}

async function startWorker(o: RunWorkerOptions, log: Logger, watch: WatchChild | null): Promise<number> {
  const modulePath = o.appSpec === null ? defaultAppModulePath() : resolveAppModule(o.appSpec)
  const includePaths = resolveIncludes(o.includes)
  let app: App
  try {
    app = await loadApp(modulePath, includePaths)
    // An events app's `imports` (its handler modules) load as -I modules do: here, and in every pool process.
    const busImports = busDescriptorOf(app)?.imports() ?? []
    if (busImports.length) {
      includePaths.push(...busImports)
      await loadApp(modulePath, includePaths)
    }
  } finally {
    // A JSON --config module is read, not imported: the loader does not see it.
    watch?.loaded([modulePath, ...includePaths, ...configModulePath()])
  }
  // An events app's handler queues (`<service>.<event>`, bound to `events`), as the library's worker consumes them.
  const busQueues = BusWorker.defaultQueues(app)
  app.configure({ broker: o.broker, resultBackend: o.resultBackend })
  const config = app.config
  // The app keeps what the environment said: the variables leave this process's environment below.
  app.configure({
    broker: config.brokerUrl,
    resultBackend: config.resultBackend,
    brokerRead: config.brokerReadUrl,
    brokerWrite: config.brokerWriteUrl,
  })
  const conf = app.options.conf ?? {}
  // A setting tsq cannot honour stops the start, one line each, before anything is declared.
  const refusals = settingsRefusals(conf, app.defaultQueue)
  if (refusals.length) throw new WorkerSettingError(refusals.join('; '))
  const queueSettings = app.queueSettings
  const settings = resolveWorkerSettings(
    {
      concurrency: o.concurrency,
      pool: o.pool,
      prefetchMultiplier: o.prefetchMultiplier,
      maxTasksPerChild: o.maxTasksPerChild,
      maxMemoryPerChild: o.maxMemoryPerChild,
      taskEvents: o.taskEvents,
      statedb: o.statedb,
    },
    conf,
    process.env,
    availableParallelism(),
  )
  // Tasks registered before a config module added task_annotations get them now, as Celery annotates lazily.
  for (const task of app.tasks.values()) {
    Object.assign(task.options, annotationsFor(conf.task_annotations, task.name))
    if (settings.disableRateLimits) {
      delete task.options.rateLimit
      delete task.options.rateLimitScope
    }
    const scope = task.options.rateLimitScope
    if (scope !== undefined && scope !== 'worker' && scope !== 'cluster')
      throw new WorkerSettingError(`${task.name}: rateLimitScope = ${JSON.stringify(scope)}: expected 'worker' or 'cluster'`)
  }
  // A cluster-wide rate limit with nowhere to keep its bucket would hold its tasks forever: refused at start.
  if ([...app.tasks.values()].some((t) => t.options.rateLimitScope === 'cluster')) {
    try {
      rateUrlFor(lockSettings(app))
    } catch (error) {
      throw new WorkerSettingError((error as Error).message)
    }
  }
  o = {
    ...o,
    concurrency: settings.concurrency.value,
    pool: settings.pool.value,
    prefetchMultiplier: settings.prefetchMultiplier.value,
    maxTasksPerChild: settings.maxTasksPerChild.value,
    maxMemoryPerChild: settings.maxMemoryPerChild.value,
    taskEvents: settings.taskEvents.value,
    // A conf or env path expands as the flag's does.
    statedb:
      settings.statedb.source === 'flag' || settings.statedb.value === null
        ? settings.statedb.value
        : nodeFormat(settings.statedb.value, o.nodename, 0),
  }
  const concurrency = settings.concurrency.value
  const pool = settings.pool.value
  // An app with a setup_logging receiver sets up its own logging: the console is left alone, in the pool too (Celery's).
  const redirectStdouts = app.signals.has('setup_logging') ? null : redirectLevel(conf)
  // Without -Q a worker consumes the app's default queue, as Celery's does.
  const queues = o.queues.length ? [...o.queues] : busQueues?.length ? busQueues.map((q) => q.name) : [app.defaultQueue]
  app.signals.send('celeryd_init', {
    sender: o.nodename,
    conf,
    options: { hostname: o.nodename, concurrency, pool, queues: [...queues], loglevel: o.loglevel },
  })
  const workerDirect = conf.worker_direct === true
  let releasePidfile: () => void = () => undefined
  const takePidfile = () => {
    if (o.pidfile) releasePidfile = acquirePidfile(o.pidfile, (m) => log.warning(m))
  }
  // A --watch reload's worker takes it once the worker it replaces has let it go.
  if (!watch) takePidfile()
  process.env.TSQ_VERSION = o.version
  // So a task of the threads or solo pool that starts a subprocess hands it no password (a HUP restart gets them back).
  launchEnv = { ...process.env }
  for (const name of Object.keys(process.env)) if (isSecretEnv(name)) delete process.env[name]
  const worker = new Worker({
    app,
    modulePath,
    includePaths,
    brokerUrl: config.brokerUrl,
    brokerReadUrl: config.brokerReadUrl,
    brokerWriteUrl: config.brokerWriteUrl,
    resultBackend: config.resultBackend,
    hostname: o.nodename,
    concurrency,
    pool,
    queues,
    excludeQueues: o.excludeQueues,
    prefetchMultiplier: settings.prefetchMultiplier.value,
    taskEvents: o.taskEvents,
    heartbeat: o.heartbeat,
    heartbeatInterval: o.heartbeatInterval,
    mingle: o.mingle,
    gossip: o.gossip,
    purge: o.purge,
    // The flags win over the app's task_* settings, as Celery's flags set them.
    timeLimit: o.timeLimit ?? positiveSetting(conf.task_time_limit),
    softTimeLimit: o.softTimeLimit ?? positiveSetting(conf.task_soft_time_limit),
    acksLate: o.acksLate && conf.task_acks_late !== false,
    logfile: o.logfileTemplate,
    loglevel: parseLevel(o.loglevel),
    redirectStdouts,
    maxTasksPerChild: o.maxTasksPerChild,
    softShutdownTimeout: o.softShutdownTimeout,
    softShutdownOnIdle: o.softShutdownOnIdle,
    autoscale: o.autoscale,
    maxMemoryPerChild: o.maxMemoryPerChild,
    statedb: o.statedb,
    eagerPool: watch !== null,
    cancelLongRunningOnLoss: o.cancelLongRunningOnLoss || conf.worker_cancel_long_running_tasks_on_connection_loss === true,
    prefetchReduction: conf.worker_enable_prefetch_count_reduction !== false,
    etaDelay: {
      enabled: o.etaBrokerDelay ?? conf.worker_eta_broker_delay !== false,
      afterSeconds: o.etaBrokerDelayAfter ?? positiveSetting(conf.worker_eta_broker_delay_after) ?? DEFAULT_ETA_DELAY_AFTER_S,
    },
    workerDirect,
    declaredQueues: busQueues,
    resolveQueue: (name) => queueDefinition(queueSettings, name),
    log,
  })
  app.signals.send('worker_init', { sender: o.nodename })
  app.signals.send('setup_logging', {
    sender: null,
    loglevel: LEVELS[parseLevel(o.loglevel)],
    logfile: o.logfile,
    format: CELERY_LOG_FORMAT,
    colorize: false,
  })
  // The worker reads `queues` when it starts consuming, so a receiver's push is consumed too.
  app.signals.send('celeryd_after_setup', { sender: o.nodename, conf, queues })
  // Read before the banner, so a bad cert_reqs stops the worker with one line; cert_reqs=none is said aloud.
  // Of a failover list, the first URL speaks for all (kombu reads its ssl options once).
  const firstBrokerUrl = splitUrlList(config.brokerUrl)[0]!
  const brokerTls = /^(amqps?|pyamqp|rediss?):/i.test(firstBrokerUrl) ? tlsPlan(firstBrokerUrl, app.transportSettings.ssl) : null
  const backendTls = config.resultBackend && /^rediss?:/i.test(config.resultBackend) ? tlsPlan(config.resultBackend, app.backendSsl) : null
  for (const [what, plan] of [
    ['broker', brokerTls],
    ['result backend', backendTls],
  ] as const) {
    if (plan?.certReqs === 'none')
      log.warning(
        `${what}: TLS certificate verification is OFF (cert_reqs=none): the connection is encrypted but the server is not authenticated`,
      )
  }
  let showBanner = !o.quiet
  if (watch) {
    watch.onCancel(() => worker.discard())
    // Loaded and started as far as it may beside the worker it replaces; nothing held yet, so a failure goes without a word on the broker.
    try {
      const started = await worker.startBeforeSwap()
      dropSlotsStartedAhead()
      if (!started) return 0
      const go = await watch.ready(pool === 'prefork' ? (o.autoscale ? Math.max(1, o.autoscale.min) : concurrency) : 0)
      showBanner &&= go.banner
      takePidfile()
    } catch (error) {
      await worker.discard()
      throw error
    }
  }
  if (showBanner) {
    process.stdout.write(
      banner({
        nodename: o.nodename,
        version: o.version,
        app: app.name,
        brokerUrl: config.brokerUrl,
        resultBackend: config.resultBackend,
        brokerTls: describeTlsPlan(brokerTls),
        backendTls: describeTlsPlan(backendTls),
        concurrency: o.autoscale ? `{min=${o.autoscale.min}, max=${o.autoscale.max}}` : concurrency,
        pool,
        taskEvents: o.taskEvents,
        queues: consumedQueues({
          queues,
          excludeQueues: o.excludeQueues,
          workerDirect,
          hostname: o.nodename,
          declaredQueues: busQueues,
          resolveQueue: (name) => queueDefinition(queueSettings, name),
        }),
        // Celery lists its own celery.* tasks only at DEBUG.
        tasks: [...app.tasks.keys()].filter((name) => log.enabled('DEBUG') || !name.startsWith('celery.')),
      }) + '\n',
    )
  }
  // Where Celery redirects them: after the banner, unless the app set up its own logging.
  if (redirectStdouts) redirectConsole(log, redirectStdouts)
  const signals = installSignals(worker, log, o)
  let companion: WorkerCompanion | undefined
  let health: WorkerHealth | undefined
  try {
    // Before the worker starts, so /healthz answers (and /readyz says "starting") during a slow start.
    const healthOptions = healthOptionsOf(o.health, conf, watch !== null, (line) => log.warning(line))
    if (healthOptions)
      health = await startWorkerHealth(worker, { ...healthOptions, queues: () => queues, log: (line) => log.warning(line) })
    // The companion first: if it cannot start (a store or broker it cannot
    // open), the worker has not taken a message yet.
    if (o.startCompanion) {
      const started = await o.startCompanion(log, config.brokerUrl)
      companion = started
      worker.beforeStop(() => started.stop())
    }
    await worker.start()
  } catch (error) {
    releasePidfile()
    await health?.close()
    await worker.shutdown('cold', 'start failed').catch(() => undefined)
    await closeRateStores().catch(() => undefined)
    await companion?.stop().catch(() => undefined)
    throw error
  }
  const stopTrimming = trimMemoryWhenIdle()
  await worker.stopped
  // The cluster rate limits' store, opened by the task path on first use.
  await closeRateStores().catch(() => undefined)
  await health?.close()
  stopTrimming()
  releasePidfile()
  // After the pidfile is gone, so the new process can take it.
  if (signals.restart) restartInPlace(o.logfile)
  return 0
}

/** Signals → intents (signals.ts); the console says what the next Ctrl-C will do. */
function installSignals(worker: Worker, log: Logger, o: RunWorkerOptions): { restart: boolean } {
  const state = { restart: false }
  const ctx: SignalContext = { remapSigterm: process.env.REMAP_SIGTERM === 'SIGQUIT', softEnabled: o.softShutdownTimeout > 0 }
  const handle = (signal: NodeJS.Signals) => {
    const intent = intentFor(signal, worker.state, ctx)
    switch (intent) {
      case 'warm':
        log.console(`\nworker: Warm shutdown (MainProcess)`)
        if (signal === 'SIGINT') log.console(nextCtrlCHint('warm', ctx))
        void worker.shutdown('warm', signal)
        return
      case 'soft':
        void worker.shutdown('soft', signal)
        // With nothing running (and no --enable-soft-shutdown-on-idle) there is no window: it went cold.
        if (worker.state === 'COLD_SHUTDOWN') log.console('\nworker: Cold shutdown (MainProcess)')
        if (signal === 'SIGINT') log.console(nextCtrlCHint(worker.state === 'COLD_SHUTDOWN' ? 'cold' : 'soft', ctx))
        return
      case 'cold':
        log.console('\nworker: Cold shutdown (MainProcess)')
        if (signal === 'SIGINT') log.console(nextCtrlCHint('cold', ctx))
        void worker.shutdown('cold', signal)
        return
      case 'cancel-tasks':
        log.console('worker: Cancelling running tasks; the soft shutdown window still runs out')
        worker.cancelTasksKeepWindow()
        return
      case 'hard':
        log.console('worker: Hard shutdown (MainProcess)')
        process.exit(1)
      // falls through (unreachable): process.exit never returns
      case 'restart':
        if (!process.env.TSQ_DETACHED) {
          log.warning('Restarting with HUP is only supported for a detached worker (-D); ignoring SIGHUP')
          return
        }
        log.warning('Restarting worker (SIGHUP)')
        state.restart = true
        void worker.shutdown('warm', signal)
        return
      case 'dump':
        log.console(dumpSlots(worker))
        return
      case 'debugger':
        void openInspector().then((url) => log.console(`worker: Node inspector listening on ${url}`))
        return
      case 'ignore':
        return
    }
  }
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGQUIT', 'SIGHUP', 'SIGUSR1', 'SIGUSR2'] as const) process.on(signal, () => handle(signal))
  return state
}

/** USR1: what each pool slot is doing right now. */
function dumpSlots(worker: Worker): string {
  const runner = worker.runnerForSignals
  const lines = ['worker: Pool slots (USR1):']
  for (const slot of worker.poolForSignals?.slots() ?? []) {
    const request = slot.taskId ? runner?.active.get(slot.taskId) : undefined
    const where = request
      ? `${taskLabel(request.name, request.id)} args=${escapeControl(String(request.message.argsrepr))} running ${((Date.now() - (slot.since ?? Date.now())) / 1000).toFixed(1)}s`
      : 'idle'
    lines.push(`  #${slot.index} pid ${slot.pid}: ${where}`)
  }
  lines.push(`  reserved: ${runner?.reserved.length ?? 0}, scheduled: ${runner?.scheduled.size ?? 0}`)
  return lines.join('\n')
}

async function openInspector(): Promise<string> {
  const inspector = await import('node:inspector')
  if (!inspector.url()) inspector.open(0, '127.0.0.1', false)
  return inspector.url() ?? 'unavailable'
}

/** The environment the worker was started with, secrets included: what a HUP restart is given. */
let launchEnv: NodeJS.ProcessEnv = process.env

/** HUP when detached: the same command again, in a new session; this process then exits. */
function restartInPlace(logfile: string | null): void {
  let out: number | 'ignore' = 'ignore'
  if (logfile) out = openSync(logfile, 'a')
  const child = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    detached: true,
    stdio: ['ignore', out, out],
    env: launchEnv,
  })
  child.unref()
}
