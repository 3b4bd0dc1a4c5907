// Configuration precedence lives here and only here: flags > TSQ_* env >
// CELERY_* env > defaults. Flags never read the environment themselves.
import {
  defaultFileBrokerUrl,
  parseFailoverStrategy,
  sentinelSettingsFrom,
  type SentinelSettings,
  type SslSettings,
  type TransportSettings,
} from '../transport/index.js'
import { checkTransportOptions } from './transport-options.js'
import { TsqError } from '../protocol/index.js'

export interface ConfigInput {
  broker?: string
  resultBackend?: string
  /** What the app module itself says (createApp options): below env, above defaults. */
  appBroker?: string
  appResultBackend?: string
  /** The zone crontab entries are read in (IANA name). */
  timezone?: string
  /** broker_read_url / broker_write_url from the app's conf. */
  appBrokerRead?: string
  appBrokerWrite?: string
  /** broker_read_url / broker_write_url as a worker resolved them, for its pool slots (whose environment lacks CELERY_BROKER_*_URL). */
  brokerRead?: string
  brokerWrite?: string
}

export interface ResolvedConfig {
  brokerUrl: string
  /** Where the broker came from, for banners and error messages. */
  brokerSource: 'flag' | 'TSQ_BROKER_URL' | 'CELERY_BROKER_URL' | 'app' | 'default'
  resultBackend: string | undefined
  /** flag > TSQ_TIMEZONE > UTC. */
  timezone: string
  /**
   * Celery's broker_read_url and broker_write_url: what a worker consumes from,
   * and what every sender publishes to. As in Celery (app/utils.py Settings),
   * CELERY_BROKER_READ_URL > conf > the broker above, even when -b gave that.
   */
  brokerReadUrl: string
  brokerWriteUrl: string
}

function firstSet(...values: Array<string | undefined>): string | undefined {
  return values.find((v) => v !== undefined && v !== '')
}

export function loadConfig(input: ConfigInput, env: NodeJS.ProcessEnv = process.env): ResolvedConfig {
  let brokerUrl: string
  let brokerSource: ResolvedConfig['brokerSource']
  if (input.broker) {
    brokerUrl = input.broker
    brokerSource = 'flag'
  } else if (env.TSQ_BROKER_URL) {
    brokerUrl = env.TSQ_BROKER_URL
    brokerSource = 'TSQ_BROKER_URL'
  } else if (env.CELERY_BROKER_URL) {
    brokerUrl = env.CELERY_BROKER_URL
    brokerSource = 'CELERY_BROKER_URL'
  } else if (input.appBroker) {
    brokerUrl = input.appBroker
    brokerSource = 'app'
  } else {
    brokerUrl = defaultFileBrokerUrl(env)
    brokerSource = 'default'
  }
  let resultBackend = firstSet(input.resultBackend, env.TSQ_RESULT_BACKEND, env.CELERY_RESULT_BACKEND, input.appResultBackend)
  // On the embedded broker the embedded result store is the natural default,
  // so `tsq call` then `tsq result` work on a fresh machine with no flags.
  if (resultBackend === undefined && brokerUrl.startsWith('file://')) resultBackend = brokerUrl
  const timezone = firstSet(input.timezone, env.TSQ_TIMEZONE) ?? 'UTC'
  const brokerReadUrl = firstSet(input.brokerRead, env.CELERY_BROKER_READ_URL, input.appBrokerRead) ?? brokerUrl
  const brokerWriteUrl = firstSet(input.brokerWrite, env.CELERY_BROKER_WRITE_URL, input.appBrokerWrite) ?? brokerUrl
  return { brokerUrl, brokerSource, resultBackend, timezone, brokerReadUrl, brokerWriteUrl }
}

/** A Celery setting from the app's conf that must be a positive number (seconds): the number, or null when it is not one. */
export function positiveSetting(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : null
}

/** broker_use_ssl / redis_backend_use_ssl: true, or Celery's dict of ca_certs, certfile, keyfile, cert_reqs. */
function sslSetting(value: unknown, name: string): SslSettings | boolean | null {
  if (value === undefined || value === null || value === false) return null
  if (value === true) return true
  if (typeof value === 'object' && !Array.isArray(value)) return value as SslSettings
  throw new TsqError('CONFIG', `${name} must be true or an object of ca_certs, certfile, keyfile, cert_reqs`)
}

/** What a transport takes from Celery's conf: broker_transport_options (visibility_timeout, Redis's key layout), broker_use_ssl, broker_login_method. */
export function transportSettingsFromConf(conf: Record<string, unknown>): TransportSettings {
  const settings: TransportSettings = {}
  // Values refused here stop a worker or beat at start-up (settings.ts); a client takes what it can read.
  const { visibilityTimeout, redisLayout, redisLiveness } = checkTransportOptions(conf.broker_transport_options)
  if (visibilityTimeout !== undefined) settings.visibilityTimeout = visibilityTimeout
  if (Object.keys(redisLayout).length > 0) settings.redisLayout = redisLayout
  if (Object.keys(redisLiveness).length > 0) settings.redisLiveness = redisLiveness
  // broker_heartbeat: None and 0 both mean off, as in Celery; a bad value is refused at start-up (settings.ts).
  if (conf.broker_heartbeat === null) settings.heartbeat = 0
  else if (typeof conf.broker_heartbeat === 'number' && Number.isFinite(conf.broker_heartbeat) && conf.broker_heartbeat >= 0)
    settings.heartbeat = conf.broker_heartbeat
  const checkrate = positiveSetting(conf.broker_heartbeat_checkrate)
  if (checkrate !== null) settings.heartbeatCheckrate = checkrate
  const ssl = sslSetting(conf.broker_use_ssl, 'broker_use_ssl')
  if (ssl !== null) settings.ssl = ssl
  if (typeof conf.broker_login_method === 'string' && conf.broker_login_method) settings.loginMethod = conf.broker_login_method
  const { settings: sentinel } = sentinelSettingsFrom(conf.broker_transport_options, 'broker_transport_options')
  if (Object.keys(sentinel).length) settings.sentinel = sentinel
  if (conf.broker_failover_strategy !== undefined && conf.broker_failover_strategy !== null) {
    try {
      settings.failoverStrategy = parseFailoverStrategy(conf.broker_failover_strategy)
    } catch (error) {
      throw new TsqError('CONFIG', (error as Error).message)
    }
  }
  const delayedType = delayedQueueTypeFromConf(conf)
  if (delayedType) settings.delayedQueueType = delayedType
  return settings
}

/**
 * The x-queue-type of kombu's celery_delayed_* queues: Celery 5.5's
 * broker_native_delayed_delivery_queue_type when given; else quorum for an
 * app with quorum queues (it runs on a cluster, where a classic ladder queue
 * on a stopped node drops what is routed to it); else unset (classic first).
 */
function delayedQueueTypeFromConf(conf: Record<string, unknown>): 'classic' | 'quorum' | undefined {
  const given = conf.broker_native_delayed_delivery_queue_type
  if (given !== undefined && given !== null) {
    if (given === 'classic' || given === 'quorum') return given
    throw new TsqError('CONFIG', `broker_native_delayed_delivery_queue_type = ${JSON.stringify(given)}: expected 'classic' or 'quorum'`)
  }
  return confNamesQuorumQueues(conf) ? 'quorum' : undefined
}

/** task_default_queue_type = 'quorum', or a task_queues entry with x-queue-type quorum (list or map form). */
function confNamesQuorumQueues(conf: Record<string, unknown>): boolean {
  if (conf.task_default_queue_type === 'quorum') return true
  const raw = conf.task_queues
  const entries = Array.isArray(raw) ? raw : raw && typeof raw === 'object' ? Object.values(raw) : []
  return entries.some((q) => {
    const args = q && typeof q === 'object' ? (q as { queue_arguments?: unknown }).queue_arguments : undefined
    return Boolean(args && typeof args === 'object' && (args as Record<string, unknown>)['x-queue-type'] === 'quorum')
  })
}

/** Celery's result_backend_transport_options (master_name, sentinel_kwargs), for a sentinel:// result backend. */
export function backendSentinelFromConf(conf: Record<string, unknown>): SentinelSettings {
  return sentinelSettingsFrom(conf.result_backend_transport_options, 'result_backend_transport_options').settings
}

/** RedBeat's order: redbeat_redis_use_ssl, else broker_use_ssl. */
export function beatStoreSslFromConf(conf: Record<string, unknown>): SslSettings | boolean | null {
  return sslSetting(conf.redbeat_redis_use_ssl, 'redbeat_redis_use_ssl') ?? sslSetting(conf.broker_use_ssl, 'broker_use_ssl')
}

export function backendSslFromConf(conf: Record<string, unknown>): SslSettings | boolean | null {
  return sslSetting(conf.redis_backend_use_ssl, 'redis_backend_use_ssl')
}
