// broker_transport_options as kombu 5.2.4's Redis channel reads them
// (kombu/transport/redis.py Channel.from_transport_options), checked against
// what tsq's transports do. A value tsq would not honour is refused, not
// dropped: a tsq worker that silently used another key layout or priority
// order than its Python peers would lose or reorder their messages.
import { sentinelSettingsFrom } from '../transport/index.js'

/** kombu's defaults, which tsq's Redis transport keeps (transport/redis/keys.ts). */
const KOMBU_REDIS_DEFAULTS: Record<string, unknown> = {
  sep: '\x06\x16',
  priority_steps: [0, 3, 6, 9],
  queue_order_strategy: 'round_robin',
  fanout_prefix: true,
  fanout_patterns: true,
  global_keyprefix: '',
  unacked_key: 'unacked',
  unacked_index_key: 'unacked_index',
  unacked_mutex_key: 'unacked_mutex',
  ack_emulation: true,
  body_encoding: 'base64',
}

/** kombu's SentinelChannel options, read for a sentinel:// broker (transport/redis/sentinel.ts). */
const SENTINEL_OPTIONS = new Set(['master_name', 'sentinel_kwargs', 'min_other_sentinels'])

/** What tsq always does: RabbitMQ publishes wait for the broker's confirm (an events app sets it, as celery-amqp-events does). */
const ALWAYS = new Set(['confirm_publish'])

/** Options kombu reads that only tune the Python client's sockets and pools: nothing another process sees. */
const CLIENT_ONLY = new Set(['socket_timeout', 'socket_connect_timeout', 'socket_keepalive', 'socket_keepalive_options', 'max_connections', 'health_check_interval', 'retry_on_timeout', 'unacked_restore_limit', 'unacked_mutex_expire'])

export interface CheckedTransportOptions {
  /** Seconds; undefined leaves the URL's or kombu's default. */
  visibilityTimeout?: number
  refusals: string[]
}

/** result_backend_transport_options: only what Celery's SentinelBackend reads (master_name, sentinel_kwargs, min_other_sentinels). */
export function checkBackendTransportOptions(value: unknown): string[] {
  if (value === undefined || value === null) return []
  if (typeof value !== 'object' || Array.isArray(value)) return ['result_backend_transport_options: expected a map of option to value']
  const refusals = sentinelSettingsFrom(value, 'result_backend_transport_options').refusals
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (!SENTINEL_OPTIONS.has(key)) refusals.push(`result_backend_transport_options.${key} = ${JSON.stringify(v)}: not an option tsq's result backend reads (master_name, sentinel_kwargs)`)
  }
  return refusals
}

export function checkTransportOptions(value: unknown): CheckedTransportOptions {
  if (value === undefined || value === null) return { refusals: [] }
  if (typeof value !== 'object' || Array.isArray(value)) return { refusals: ['broker_transport_options: expected a map of option to value'] }
  const refusals: string[] = []
  let visibilityTimeout: number | undefined
  refusals.push(...sentinelSettingsFrom(value, 'broker_transport_options').refusals)
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (SENTINEL_OPTIONS.has(key)) continue
    if (key === 'visibility_timeout') {
      if (typeof v === 'number' && Number.isFinite(v) && v > 0) visibilityTimeout = v
      else refusals.push(`broker_transport_options.visibility_timeout = ${JSON.stringify(v)}: expected seconds > 0`)
    } else if (key in KOMBU_REDIS_DEFAULTS) {
      if (JSON.stringify(v) !== JSON.stringify(KOMBU_REDIS_DEFAULTS[key])) {
        refusals.push(`broker_transport_options.${key} = ${JSON.stringify(v)}: tsq keeps kombu's default (${JSON.stringify(KOMBU_REDIS_DEFAULTS[key])}), so another value would split its Redis layout from the Python workers'`)
      }
    } else if (!CLIENT_ONLY.has(key) && !ALWAYS.has(key)) {
      refusals.push(`broker_transport_options.${key} = ${JSON.stringify(v)}: not an option tsq's transports read`)
    }
  }
  return { ...(visibilityTimeout !== undefined ? { visibilityTimeout } : {}), refusals }
}
