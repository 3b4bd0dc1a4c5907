// What a client command (inspect, control, status, call, result, purge, events,
// schedule) talks to, from the global options: the broker, the result backend,
// and with -A the app's settings (task routes, default queue, transport
// options), as `celery -A proj inspect ping` takes them from the app. The
// precedence is the worker's (config/config.ts): a flag, then TSQ_* and CELERY_*
// variables, then the app's own options, then the --config module, then the
// defaults. No oclif here: the fast path uses it too.
import { backendOptionsFromConf, type BackendOptions } from '../backends/index.js'
import {
  beatStoreSslFromConf,
  loadConfig,
  transportSettingsFromConf,
  type ResolvedConfig,
  routeTask,
  type Route,
  queueDefinition,
  queueSettings,
  type QueueDefinition,
  type QueueSettings,
} from '../config/index.js'
import { CONFIG_MODULE_ENV, configModuleUrls, loadApp, loadConfigModule, resolveAppModule } from '../app/index.js'
import { DEFAULT_QUEUE } from '../client/index.js'
import type { BodyEncoder, ControlKind } from '../protocol/index.js'
import type { SslSettings, TransportSettings } from '../transport/index.js'
import { TsqError } from '../protocol/index.js'

export interface GlobalFlagValues {
  app?: string
  broker?: string
  'result-backend'?: string
  config?: string
  workdir?: string
}

export interface ClientConfig extends ResolvedConfig {
  /** Where a task goes when nothing names a queue (task_default_queue). */
  defaultQueue: string
  /** broker_transport_options, as far as tsq's transports take them. */
  transportSettings: TransportSettings
  /** What the result backend takes from the settings (redis_backend_use_ssl, result_backend_transport_options, database_*). */
  backendOptions: Omit<BackendOptions, 'codec'>
  /** redbeat_redis_use_ssl, else broker_use_ssl, for beat's Redis store. */
  beatStoreSsl: SslSettings | boolean | null
  /** The task's route (task_routes), else the default queue. */
  routeFor(taskName: string): Route
  /** The queue as task_queues (or task_default_queue_type) defines it, so a send declares it as the workers do. */
  resolveQueue(name: string): QueueDefinition
  /** task_default_delivery_mode. */
  deliveryMode(): 1 | 2
  /** With -A: the app's task_serializer (signed under auth). */
  taskEncoder?: () => BodyEncoder
  /** task_publish_timeout: seconds a send waits for the broker's confirm; null: no limit. */
  publishTimeout: number | null
  /** conf.lock_url (the app's with -A, else the config module's), for `tsq locks`. */
  lockUrl?: string | null
  /** conf.dashboard_allowed_hosts: Host names the dashboard answers to besides its own address and localhost. */
  dashboardAllowedHosts?: string[]
  /** With -A: the app's own remote-control commands (app.controlCommand), by name, and their kind. */
  controlCommands?: ReadonlyMap<string, ControlKind>
}

/**
 * `--workdir` and `--config`, before anything reads a path: change directory
 * (Celery's --workdir), then leave the config module's absolute path in the
 * environment for every process of the run (Celery's --config sets
 * CELERY_CONFIG_MODULE). A process that `--detach` started is already in the
 * directory: its relative --workdir would take it one level further.
 */
export function applyGlobalOptions(flags: Pick<GlobalFlagValues, 'config' | 'workdir'>): void {
  if (flags.workdir && !process.env.TSQ_DETACHED) {
    try {
      process.chdir(flags.workdir)
    } catch (error) {
      throw new TsqError(
        'USAGE',
        `--workdir ${JSON.stringify(flags.workdir)}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such directory' : (error as Error).message}`,
      )
    }
  }
  if (flags.config) process.env[CONFIG_MODULE_ENV] = resolveAppModule(flags.config, process.cwd(), 'the config module')
}

export async function clientConfig(flags: GlobalFlagValues): Promise<ClientConfig> {
  if (flags.app) {
    const app = await loadApp(resolveAppModule(flags.app))
    app.configure({ broker: flags.broker, resultBackend: flags['result-backend'] })
    // Read when a send needs it, so a command that sends nothing is not stopped by a task_queues mistake.
    let queues: QueueSettings | undefined
    const settingsOfQueues = () => (queues ??= app.queueSettings)
    return {
      ...app.config,
      // Celery's clients (call, inspect, control, purge) use connection_for_write.
      brokerUrl: app.config.brokerWriteUrl,
      defaultQueue: app.defaultQueue,
      transportSettings: app.transportSettings,
      backendOptions: app.backendOptions,
      beatStoreSsl: beatStoreSslFromConf(app.conf),
      routeFor: (name) => app.routeFor(name),
      resolveQueue: (name) => queueDefinition(settingsOfQueues(), name),
      deliveryMode: () => settingsOfQueues().defaultDeliveryMode,
      taskEncoder: () => app.taskEncoder(),
      lockUrl: stringOr(app.conf.lock_url),
      dashboardAllowedHosts: hostList(app.conf.dashboard_allowed_hosts),
      publishTimeout: secondsOr(app.conf.task_publish_timeout),
      controlCommands: new Map([...app.controlCommands].map(([name, command]) => [name, command.kind])),
    }
  }
  const settings = await loadConfigModule()
  const config = loadConfig({ broker: flags.broker, resultBackend: flags['result-backend'], ...configModuleUrls(settings) })
  const queue = settings.task_default_queue
  const defaultQueue = typeof queue === 'string' && queue ? queue : DEFAULT_QUEUE
  let queues: QueueSettings | undefined
  const settingsOfQueues = () => (queues ??= queueSettings(settings, defaultQueue))
  return {
    ...config,
    brokerUrl: config.brokerWriteUrl,
    defaultQueue,
    transportSettings: transportSettingsFromConf(settings),
    backendOptions: backendOptionsFromConf(settings),
    beatStoreSsl: beatStoreSslFromConf(settings),
    routeFor: (name) => routeTask(name, settings.task_routes) ?? { queue: defaultQueue },
    resolveQueue: (name) => queueDefinition(settingsOfQueues(), name),
    deliveryMode: () => settingsOfQueues().defaultDeliveryMode,
    lockUrl: stringOr(settings.lock_url),
    dashboardAllowedHosts: hostList(settings.dashboard_allowed_hosts),
    publishTimeout: secondsOr(settings.task_publish_timeout),
  }
}

/** A list of names, or one string of them separated by commas. */
function hostList(value: unknown): string[] {
  const items =
    typeof value === 'string' ? value.split(',') : Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []
  return items.map((h) => h.trim()).filter(Boolean)
}

function secondsOr(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : null
}

function stringOr(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null
}
