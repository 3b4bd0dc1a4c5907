// broker_transport_options as kombu 5.2.4's Redis channel reads them
// (kombu/transport/redis.py Channel.from_transport_options), turned into what
// tsq's transports take. A value tsq would not honour is refused, not dropped:
// a tsq worker that silently used another key layout or priority order than
// its Python peers would lose or reorder their messages.
import { shownSetting } from '../protocol/index.js'
import { type RedisLayoutOptions, type RedisLiveness, sentinelSettingsFrom } from '../transport/index.js'

/** What kombu's Redis channel reads that tsq only takes at kombu's default. */
const KEPT_AT_DEFAULT: Record<string, unknown> = {
  ack_emulation: true,
  body_encoding: 'base64',
}

/** kombu's SentinelChannel options, read for a sentinel:// broker (transport/redis/sentinel.ts). */
const SENTINEL_OPTIONS = new Set(['master_name', 'sentinel_kwargs', 'min_other_sentinels'])

/** What tsq always does: RabbitMQ publishes wait for the broker's confirm (an events app sets it, as celery-amqp-events does). */
const ALWAYS = new Set(['confirm_publish'])

/** Options kombu reads that only tune the Python client's sockets and pools: nothing another process sees. */
const CLIENT_ONLY = new Set([
  'socket_keepalive_options',
  'max_connections',
  'retry_on_timeout',
  'unacked_restore_limit',
  'unacked_mutex_expire',
])

/**
 * How a Redis connection notices a dead path (transport/redis/liveness.ts),
 * for the broker and beat's store from broker_transport_options, for the
 * result backend from the redis_socket_* settings: seconds, None allowed.
 */
export function readLiveness(
  values: { socket_timeout?: unknown; socket_connect_timeout?: unknown; socket_keepalive?: unknown; health_check_interval?: unknown },
  names: { socket_timeout: string; socket_connect_timeout: string; socket_keepalive: string; health_check_interval: string },
): { liveness: RedisLiveness; refusals: string[] } {
  const liveness: RedisLiveness = {}
  const refusals: string[] = []
  const seconds = (v: unknown, name: string, zeroOk: boolean): number | null | undefined => {
    if (v === undefined) return undefined
    if (v === null) return null
    if (typeof v === 'number' && Number.isFinite(v) && (v > 0 || (zeroOk && v === 0)) && v <= 86_400) return v
    refusals.push(`${name} = ${JSON.stringify(v)}: expected seconds ${zeroOk ? '>= 0' : '> 0'} (at most a day), or None`)
    return undefined
  }
  const t = seconds(values.socket_timeout, names.socket_timeout, false)
  if (t !== undefined) liveness.socketTimeout = t
  const c = seconds(values.socket_connect_timeout, names.socket_connect_timeout, false)
  if (c !== undefined) liveness.socketConnectTimeout = c
  const h = seconds(values.health_check_interval, names.health_check_interval, true)
  if (h !== undefined) liveness.healthCheckInterval = h ?? 0
  const k = values.socket_keepalive
  if (k !== undefined) {
    if (k === null || typeof k === 'boolean') liveness.socketKeepalive = k
    else refusals.push(`${names.socket_keepalive} = ${JSON.stringify(k)}: expected True, False or None`)
  }
  return { liveness, refusals }
}

const LIVENESS_KEYS = new Set(['socket_timeout', 'socket_connect_timeout', 'socket_keepalive', 'health_check_interval'])

const QUEUE_ORDER = ['round_robin', 'priority', 'sorted'] as const

export interface CheckedTransportOptions {
  /** Seconds; undefined leaves the URL's or kombu's default. */
  visibilityTimeout?: number
  /** The Redis layout (global_keyprefix, sep, priority_steps...), only what the options set. */
  redisLayout: RedisLayoutOptions
  /** socket_timeout, socket_connect_timeout, socket_keepalive, health_check_interval, only what the options set. */
  redisLiveness: RedisLiveness
  refusals: string[]
}

type Reader = (v: unknown, layout: RedisLayoutOptions) => string | null

const keyName =
  (field: 'unackedKey' | 'unackedIndexKey' | 'unackedMutexKey'): Reader =>
  (v, layout) => {
    if (typeof v !== 'string' || v === '') return 'expected a key name'
    layout[field] = v
    return null
  }

/** Each layout option: store it in the layout, or say why it cannot be read (kombu would fail on it, or do something tsq does not). */
const LAYOUT: Record<string, Reader> = {
  global_keyprefix: (v, layout) => {
    if (typeof v !== 'string') return 'expected a string'
    layout.globalKeyprefix = v
    return null
  },
  sep: (v, layout) => {
    if (typeof v !== 'string' || v === '') return 'expected a non-empty string'
    layout.sep = v
    return null
  },
  priority_steps: (v, layout) => {
    if (!Array.isArray(v) || v.length === 0 || !v.every((s) => Number.isInteger(s) && s >= 0))
      return 'expected a list of whole numbers >= 0'
    layout.prioritySteps = v as number[]
    return null
  },
  queue_order_strategy: (v, layout) => {
    if (!QUEUE_ORDER.includes(v as (typeof QUEUE_ORDER)[number]))
      return `expected one of ${QUEUE_ORDER.join(', ')} (a Python cycle class cannot be used here)`
    layout.queueOrderStrategy = v as (typeof QUEUE_ORDER)[number]
    return null
  },
  fanout_prefix: (v, layout) => {
    if (typeof v !== 'boolean' && typeof v !== 'string') return 'expected true, false or a prefix such as "/{db}."'
    // kombu tests the option for truth: an empty string is no prefix.
    layout.fanoutPrefix = v === '' ? false : v
    return null
  },
  fanout_patterns: (v, layout) => {
    if (typeof v !== 'boolean') return 'expected true or false'
    layout.fanoutPatterns = v
    return null
  },
  unacked_key: keyName('unackedKey'),
  unacked_index_key: keyName('unackedIndexKey'),
  unacked_mutex_key: keyName('unackedMutexKey'),
}

/** result_backend_transport_options: only what Celery's SentinelBackend reads (master_name, sentinel_kwargs, min_other_sentinels). */
export function checkBackendTransportOptions(value: unknown): string[] {
  if (value === undefined || value === null) return []
  if (typeof value !== 'object' || Array.isArray(value)) return ['result_backend_transport_options: expected a map of option to value']
  const refusals = sentinelSettingsFrom(value, 'result_backend_transport_options').refusals
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (!SENTINEL_OPTIONS.has(key))
      refusals.push(
        `${shownSetting(`result_backend_transport_options.${key}`, v)}: not an option tsq's result backend reads (master_name, sentinel_kwargs)`,
      )
  }
  return refusals
}

export function checkTransportOptions(value: unknown): CheckedTransportOptions {
  const redisLayout: RedisLayoutOptions = {}
  if (value === undefined || value === null) return { redisLayout, redisLiveness: {}, refusals: [] }
  if (typeof value !== 'object' || Array.isArray(value))
    return { redisLayout, redisLiveness: {}, refusals: ['broker_transport_options: expected a map of option to value'] }
  const refusals: string[] = []
  const prefixed = (k: string) => `broker_transport_options.${k}`
  const { liveness: redisLiveness, refusals: livenessRefusals } = readLiveness(value as Record<string, unknown>, {
    socket_timeout: prefixed('socket_timeout'),
    socket_connect_timeout: prefixed('socket_connect_timeout'),
    socket_keepalive: prefixed('socket_keepalive'),
    health_check_interval: prefixed('health_check_interval'),
  })
  refusals.push(...livenessRefusals)
  let visibilityTimeout: number | undefined
  refusals.push(...sentinelSettingsFrom(value, 'broker_transport_options').refusals)
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (SENTINEL_OPTIONS.has(key) || LIVENESS_KEYS.has(key)) continue
    const read = LAYOUT[key]
    if (key === 'visibility_timeout') {
      if (typeof v === 'number' && Number.isFinite(v) && v > 0) visibilityTimeout = v
      else refusals.push(`${shownSetting('broker_transport_options.visibility_timeout', v)}: expected seconds > 0`)
    } else if (read) {
      const why = read(v, redisLayout)
      if (why) refusals.push(`${shownSetting(`broker_transport_options.${key}`, v)}: ${why}`)
    } else if (key in KEPT_AT_DEFAULT) {
      if (JSON.stringify(v) !== JSON.stringify(KEPT_AT_DEFAULT[key])) {
        refusals.push(
          `${shownSetting(`broker_transport_options.${key}`, v)}: tsq keeps kombu's default (${JSON.stringify(KEPT_AT_DEFAULT[key])}), so another value would split its Redis layout from the Python workers'`,
        )
      }
    } else if (!CLIENT_ONLY.has(key) && !ALWAYS.has(key)) {
      refusals.push(`${shownSetting(`broker_transport_options.${key}`, v)}: not an option tsq's transports read`)
    }
  }
  return { ...(visibilityTimeout !== undefined ? { visibilityTimeout } : {}), redisLayout, redisLiveness, refusals }
}
