// The worker's settings, resolved from flags, environment and the app's conf.
import type { App } from '../app/index.js'
import type { LevelName, Logger } from '../process/index.js'
import { taskQueue, workerDirectQueue, type QueueDefinition } from '../config/index.js'
import type { QueueDeclaration } from './control/control-handlers.js'
import type { PoolKind } from './pools/pool.js'
import type { EtaDelayPolicy } from './task-path/task-runner.js'

export interface WorkerOptions {
  app: App
  modulePath: string
  /** `-I/--include`: loaded after the app module, in every pool slot too. */
  includePaths: string[]
  brokerUrl: string
  /** broker_read_url / broker_write_url (config/config.ts): consumed from, published to; both default to brokerUrl. */
  brokerReadUrl?: string
  brokerWriteUrl?: string
  resultBackend: string | undefined
  hostname: string
  concurrency: number
  pool: PoolKind
  queues: string[]
  excludeQueues: string[]
  prefetchMultiplier: number
  taskEvents: boolean
  heartbeat: boolean
  heartbeatInterval: number
  mingle: boolean
  /** Follow the other workers' worker-* events (Celery's gossip). */
  gossip: boolean
  purge: boolean
  timeLimit: number | null
  softTimeLimit: number | null
  acksLate: boolean
  logfile: string | null
  /** The worker's -l, for the pool slots' own logs. */
  loglevel: LevelName
  /** worker_redirect_stdouts_level, or null: what task code prints, logged at this level. */
  redirectStdouts: LevelName | null
  maxTasksPerChild: number | undefined
  /** worker_soft_shutdown_timeout, seconds; 0 disables the soft phase. */
  softShutdownTimeout: number
  /** worker_enable_soft_shutdown_on_idle. */
  softShutdownOnIdle: boolean
  /** --autoscale=MAX,MIN: the pool starts at MIN; prefetch follows MAX. */
  autoscale: { max: number; min: number } | null
  /** --max-memory-per-child, KiB. */
  maxMemoryPerChild: number | undefined
  /** --statedb, already expanded. */
  statedb: string | null
  /** Start every slot with the pool, even in a pool that starts them when jobs need them (threads): a --watch reload's worker, so its first tasks do not wait for them. */
  eagerPool?: boolean
  /** worker_cancel_long_running_tasks_on_connection_loss. */
  cancelLongRunningOnLoss: boolean
  /** worker_enable_prefetch_count_reduction (Celery's default: on). */
  prefetchReduction: boolean
  /** worker_eta_broker_delay and worker_eta_broker_delay_after (see EtaDelayPolicy). The worker lowers `afterSeconds` when the broker shows a shorter timeout. */
  etaDelay: EtaDelayPolicy
  /** worker_direct: also consume `<hostname>.dq2`, bound to the `C.dq2` exchange by the node name. */
  workerDirect: boolean
  /** Queues that are not Celery's automatic `Queue(q, Exchange(q), q)` (an events app's handler queues), as they are declared. */
  declaredQueues?: readonly QueueDeclaration[]
  /** The app's definition of a queue (task_queues, task_queue_max_priority, task_create_missing_queues). */
  resolveQueue?: (name: string) => QueueDefinition
  log: Logger
}

/**
 * What the worker consumes at start, as the banner lists it: -Q less -X, each
 * Celery's automatic queue, then the worker_direct queue, which Celery adds
 * after -X so that excluding queues never drops it.
 */
export function consumedQueues(
  o: Pick<WorkerOptions, 'queues' | 'excludeQueues' | 'workerDirect' | 'hostname' | 'declaredQueues' | 'resolveQueue'>,
): QueueDeclaration[] {
  const declared: QueueDeclaration[] = o.queues
    .filter((q) => !o.excludeQueues.includes(q))
    .map((name) => {
      const own = o.declaredQueues?.find((d) => d.name === name)
      if (own) return { ...own }
      const definition = o.resolveQueue?.(name)
      if (definition)
        return {
          name,
          exchange: definition.exchange.name,
          exchangeType: definition.exchange.type,
          routingKey: definition.routingKey,
          definition,
        }
      const { exchange, routingKey } = taskQueue(name)
      return { name, exchange: exchange.name, exchangeType: exchange.type, routingKey }
    })
  if (o.workerDirect) declared.push(workerDirectQueue(o.hostname))
  return declared
}
