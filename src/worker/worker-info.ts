// What `inspect stats` (broker), `inspect conf` and `inspect report` say about
// a worker: Celery's shapes, built from the worker's options.
import { hostname as osHostname } from 'node:os'
import { DEFAULT_QUEUE } from '../client/index.js'
import { filterHiddenSettings } from '../config/index.js'
import { maskUrl, parseBrokerUrl, parseFailoverStrategy, type Transport } from '../transport/index.js'
import type { WorkerOptions } from './worker-options.js'

/**
 * Celery's `broker` field names the node the worker is connected to (kombu's
 * Connection.info(): of a failover list, the URL in use), with the list in
 * `alternates`, masked here where Celery prints its passwords.
 */
export function brokerInfo(o: WorkerOptions, transport: Pick<Transport, 'kind' | 'connectedNode' | 'alternates'>): Record<string, unknown> {
  const kind = transport.kind
  const u = parseBrokerUrl(o.brokerUrl)
  const node = transport.connectedNode
  return {
    hostname: node?.hostname ?? (u.hostname || osHostname()),
    userid: node?.username ?? u.username ?? null,
    virtual_host: node?.vhost ?? (kind === 'amqp' ? (u.path === '' || u.path === '/' ? '/' : u.path) : u.path || '0'),
    port: node?.port ?? u.port ?? (kind === 'amqp' ? 5672 : u.scheme === 'sentinel' ? 26379 : kind === 'redis' ? 6379 : null),
    insist: false,
    ssl: u.scheme === 'amqps' || u.scheme === 'rediss' || Boolean(o.app.transportSettings.ssl),
    // kombu names the Sentinel transport for its scheme.
    transport: u.scheme === 'sentinel' ? 'sentinel' : kind,
    connect_timeout: 4,
    // Celery reports the app's broker_transport_options here as they were set.
    transport_options: filterHiddenSettings((o.app.options.conf?.broker_transport_options as Record<string, unknown> | undefined) ?? {}),
    login_method: kind === 'amqp' ? loginMethodOf(o) : null,
    uri_prefix: null,
    heartbeat: 120.0,
    failover_strategy: parseFailoverStrategy(o.app.options.conf?.broker_failover_strategy),
    alternates: [...(transport.alternates ?? [])],
  }
}

function loginMethodOf(o: WorkerOptions): string {
  let fromUrl: string | null = null
  try {
    fromUrl = new URL(o.brokerUrl).searchParams.get('login_method')
  } catch {
    // The broker URL was read already; an odd one just reports the default.
  }
  return (fromUrl ?? o.app.transportSettings.loginMethod ?? 'PLAIN').toUpperCase()
}

export function workerConf(o: WorkerOptions, taskEvents: boolean, withDefaults: boolean): Record<string, unknown> {
  const changed: Record<string, unknown> = {
    broker_url: maskUrl(o.brokerUrl),
    result_backend: o.resultBackend ? maskUrl(o.resultBackend) : null,
    worker_concurrency: o.autoscale ? o.autoscale.max : o.concurrency,
    worker_prefetch_multiplier: o.prefetchMultiplier,
    worker_send_task_events: taskEvents,
    task_acks_late: o.acksLate,
    task_time_limit: o.timeLimit,
    task_soft_time_limit: o.softTimeLimit,
    include: [o.modulePath, ...o.includePaths],
    // A setting Celery lists as changed only when it is not its default.
    ...(o.app.defaultQueue !== DEFAULT_QUEUE ? { task_default_queue: o.app.defaultQueue } : {}),
    ...(o.app.options.conf ?? {}),
  }
  // The app's own conf may repeat broker_url with its password, or hold keys: both are masked as Celery masks them.
  const shown = filterHiddenSettings(changed)
  // Celery 5.2.6's Settings keeps its deprecated_settings attribute among the
  // changed keys, so every Celery worker's reply has it (None: no old-style
  // names, which tsq does not read).
  if (!withDefaults) return { ...Object.fromEntries(Object.entries(shown).filter(([, v]) => v !== null)), deprecated_settings: null }
  return {
    task_default_queue: DEFAULT_QUEUE,
    task_serializer: 'json',
    result_serializer: 'json',
    accept_content: ['json'],
    ...shown,
    deprecated_settings: null,
  }
}

export function workerReport(o: WorkerOptions, kind: Transport['kind']): string {
  return [
    `software -> tsq:${process.env.TSQ_VERSION ?? '0.1.0'} node:${process.version} (${process.platform}-${process.arch})`,
    `platform -> system:${process.platform} arch:${process.arch}`,
    `loader -> tsq`,
    `settings -> transport:${kind} results:${o.resultBackend ? maskUrl(o.resultBackend) : 'disabled'}`,
  ].join('\n')
}
