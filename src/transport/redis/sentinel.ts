// Redis Sentinel as kombu 5.2.4 (SentinelChannel) and Celery 5.2.6
// (SentinelBackend) spell it: `sentinel://[user:pass@]host[:port][/db]`,
// several joined by `;`, one per Sentinel. The URL's password and db are the
// master's (kombu passes them on to master_for); the Sentinels themselves are
// reached with `sentinel_kwargs`; the master's name is the transport option
// `master_name` (broker_transport_options, or result_backend_transport_options
// for a result backend). ioredis asks the Sentinels for the master, checks its
// role on every connect, and moves on when one announces +switch-master.
import { BadBrokerUrlError } from '../errors.js'
import { maskUrl } from '../url.js'
import { shownSetting } from '../../protocol/index.js'

export const SENTINEL_DEFAULT_PORT = 26379

/** What an app's conf says about its Sentinels (the transport options kombu reads for sentinel://). */
export interface SentinelSettings {
  /** master_name: the name the Sentinels monitor the master under. */
  masterName?: string
  /** sentinel_kwargs: how to log in to the Sentinels (password, username). */
  sentinelPassword?: string
  sentinelUsername?: string
}

export interface SentinelTarget {
  sentinels: Array<{ host: string; port: number }>
  masterName: string
  db: number
  username: string | undefined
  password: string | undefined
  sentinelUsername: string | undefined
  sentinelPassword: string | undefined
}

export function isSentinelUrl(url: string): boolean {
  return /^sentinel:\/\//i.test(url.trim())
}

/** sentinel_kwargs keys that only tune redis-py's sockets: nothing another process sees. */
const CLIENT_ONLY_KWARGS = new Set([
  'socket_timeout',
  'socket_connect_timeout',
  'socket_keepalive',
  'socket_keepalive_options',
  'health_check_interval',
  'retry_on_timeout',
])

/**
 * master_name, sentinel_kwargs and min_other_sentinels from a transport
 * options map (`where` names the setting in messages). Values tsq would not
 * honour are refused with a line each, as broker_transport_options' others.
 */
export function sentinelSettingsFrom(options: unknown, where: string): { settings: SentinelSettings; refusals: string[] } {
  const settings: SentinelSettings = {}
  const refusals: string[] = []
  if (options === undefined || options === null || typeof options !== 'object' || Array.isArray(options)) return { settings, refusals }
  const o = options as Record<string, unknown>
  if (o.master_name !== undefined && o.master_name !== null) {
    if (typeof o.master_name === 'string' && o.master_name !== '') settings.masterName = o.master_name
    else refusals.push(`${shownSetting(`${where}.master_name`, o.master_name)}: expected the Sentinel master's name`)
  }
  const kwargs = o.sentinel_kwargs
  if (kwargs !== undefined && kwargs !== null) {
    if (typeof kwargs !== 'object' || Array.isArray(kwargs)) {
      refusals.push(`${where}.sentinel_kwargs: expected a map (password, username)`)
    } else {
      for (const [key, v] of Object.entries(kwargs as Record<string, unknown>)) {
        if ((key === 'password' || key === 'username') && (typeof v === 'string' || v === null)) {
          if (typeof v === 'string') settings[key === 'password' ? 'sentinelPassword' : 'sentinelUsername'] = v
        } else if (!CLIENT_ONLY_KWARGS.has(key)) {
          refusals.push(`${where}.sentinel_kwargs.${key}: not an option tsq's Sentinel client reads (password, username)`)
        }
      }
    }
  }
  // redis-py's check that the answering Sentinel sees this many peers; ioredis trusts any Sentinel's answer.
  if (o.min_other_sentinels !== undefined && o.min_other_sentinels !== 0) {
    refusals.push(
      `${shownSetting(`${where}.min_other_sentinels`, o.min_other_sentinels)}: tsq takes the master from any Sentinel that answers (only 0 is honoured)`,
    )
  }
  return { settings, refusals }
}

/**
 * The Sentinels of a `sentinel://a;sentinel://b` list, with the master's
 * credentials and db from its first URL (kombu's connparams), and the master
 * name from `settings`: without one, one line naming the setting to give.
 */
export function parseSentinelUrl(
  url: string,
  settings: SentinelSettings | undefined,
  optionsName = 'broker_transport_options',
): SentinelTarget {
  const entries = url
    .split(';')
    .map((u) => u.trim())
    .filter((u) => u !== '')
  const sentinels: SentinelTarget['sentinels'] = []
  let first: URL | undefined
  for (const entry of entries) {
    if (!isSentinelUrl(entry))
      throw new BadBrokerUrlError(`every URL of a Sentinel list must be sentinel://, got ${maskUrl(entry)} in ${maskUrl(url)}`)
    let parsed: URL
    try {
      parsed = new URL(entry)
    } catch {
      throw new BadBrokerUrlError(`malformed Sentinel URL: ${maskUrl(entry)}`)
    }
    if (!parsed.hostname) throw new BadBrokerUrlError(`Sentinel URL without a host: ${maskUrl(entry)}`)
    first ??= parsed
    sentinels.push({
      host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: parsed.port === '' ? SENTINEL_DEFAULT_PORT : Number(parsed.port),
    })
  }
  if (!first) throw new BadBrokerUrlError(`empty Sentinel URL list: '${maskUrl(url)}'`)
  const dbText = first.pathname.replace(/^\//, '').replace(/\/+$/, '')
  if (dbText !== '' && !/^\d+$/.test(dbText))
    throw new BadBrokerUrlError(`redis database must be a number, got '${dbText}' in ${maskUrl(url)}`)
  const masterName = settings?.masterName
  if (!masterName) {
    throw new BadBrokerUrlError(
      `${maskUrl(url)}: sentinel:// needs ${optionsName}.master_name (the name the Sentinels monitor the master under); set it in the app's conf or the --config module`,
    )
  }
  return {
    sentinels,
    masterName,
    db: dbText === '' ? 0 : Number(dbText),
    username: first.username ? decodeURIComponent(first.username) : undefined,
    password: first.password ? decodeURIComponent(first.password) : undefined,
    sentinelUsername: settings.sentinelUsername,
    sentinelPassword: settings.sentinelPassword,
  }
}

/**
 * Errors that say the connection reached a master that is one no longer:
 * READONLY (a demoted master now a replica), NOREPLICAS (a master cut off
 * from its replicas by min-replicas-to-write, as an old master is the moment
 * its replica is promoted), UNBLOCKED (a blocking pop ended by that change).
 * redis-py's SentinelManagedConnection turns READONLY into a connection
 * error the same way: reconnect through the Sentinels, and retry.
 */
export function isDemotedMasterError(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error)
  if (/^(READONLY|NOREPLICAS|UNBLOCKED)\b/.test(message) || /\b(READONLY You can't write|NOREPLICAS Not enough)/.test(message)) return true
  // EXECABORT: a MULTI whose commands were refused as they were queued; ioredis keeps why.
  const previous = (error as { previousErrors?: unknown[] } | null)?.previousErrors
  return /^EXECABORT\b/.test(message) && Array.isArray(previous) && previous.some((e) => isDemotedMasterError(e))
}

/** How long a refused command is tried again through the Sentinels: a failover's switch takes a few seconds. */
const DEMOTED_RETRY_MS = 15_000

/**
 * Runs `op` again while it fails because the master is one no longer: Redis
 * refused the command without running it (READONLY, NOREPLICAS, EXECABORT of
 * those), so running it again on the new master cannot apply it twice.
 */
export async function retryWhileDemoted<T>(op: () => Promise<T>, budgetMs = DEMOTED_RETRY_MS): Promise<T> {
  const deadline = Date.now() + budgetMs
  for (let attempt = 1; ; attempt++) {
    try {
      return await op()
    } catch (error) {
      if (!isDemotedMasterError(error) || Date.now() >= deadline) throw error
      await new Promise((r) => setTimeout(r, Math.min(100 * attempt, 500)))
    }
  }
}

/** The ioredis options that reach the master through `target`'s Sentinels. */
export function sentinelClientOptions(target: SentinelTarget) {
  return {
    sentinels: target.sentinels,
    name: target.masterName,
    role: 'master' as const,
    db: target.db,
    username: target.username,
    password: target.password,
    sentinelUsername: target.sentinelUsername,
    sentinelPassword: target.sentinelPassword,
    // Subscribes to +switch-master on the Sentinels and reconnects at once,
    // instead of writing on to the old master until it is turned into a replica.
    failoverDetector: true,
    // The detector's Sentinel connections have no error listener of ours: left
    // to reconnect, a Sentinel that is down prints ioredis's "Unhandled error
    // event" every second. Not reconnected, they end quietly; the next connect
    // of the master's connection subscribes anew to the Sentinels then up.
    sentinelReconnectStrategy: () => null,
    // A few rounds over the Sentinels per connect, so a first connect to none
    // fails with one line; the connection's own retryStrategy then tries again.
    sentinelRetryStrategy: (times: number) => (times > 3 ? null : 100 * times),
    // Reject the command (1, not 2: a resent write of a MULTI would run outside it) and reconnect through the Sentinels.
    reconnectOnError: (error: Error) => (isDemotedMasterError(error) ? (1 as const) : false),
  }
}

/** How a failed first connect through Sentinels reads: which master name no Sentinel knew, else the driver's line. */
export function explainSentinelFailure(
  error: unknown,
  target: Pick<SentinelTarget, 'sentinels' | 'masterName'>,
  lastSentinelError: Error | undefined,
): string {
  const message = error instanceof Error ? error.message : String(error)
  // Redis 7's Sentinel answers an unknown name with an error, older ones with nil.
  if ((lastSentinelError && /invalid reply: null/.test(lastSentinelError.message)) || /No such master with that name/.test(message)) {
    return `no Sentinel at ${target.sentinels.map((s) => `${s.host}:${s.port}`).join(', ')} knows a master named '${target.masterName}' (master_name)`
  }
  return message
}
