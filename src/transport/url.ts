import { BadBrokerUrlError } from './errors.js'
import { maskUrl } from '../protocol/index.js'

/**
 * kombu's failover list separator: `amqp://a//;amqp://b//` is a list of
 * whole URLs (kombu's Connection splits its hostname on `;`), tried in turn.
 */
export const URL_LIST_SEPARATOR = ';'

/**
 * Celery's broker_url as a list of URLs: a `;`-separated string or an array
 * of URLs (kombu accepts both, and a `;` inside an array entry too). Blank
 * entries (a trailing `;`) are dropped; at least one URL must remain.
 */
export function splitUrlList(value: string | readonly string[]): string[] {
  const entries = (typeof value === 'string' ? [value] : [...value]).flatMap((v) => v.split(URL_LIST_SEPARATOR))
  const urls = entries.map((u) => u.trim()).filter((u) => u !== '')
  if (urls.length === 0)
    throw new BadBrokerUrlError(`empty broker URL list: '${typeof value === 'string' ? value : value.join(URL_LIST_SEPARATOR)}'`)
  return urls
}

/** A setting's value (broker_url in a conf: a string or a list) as the one-string form config carries; undefined when unset. */
export function urlListSetting(value: unknown): string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value
  if (Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'string'))
    return splitUrlList(value).join(URL_LIST_SEPARATOR)
  return undefined
}

/** kombu's as_uri(include_password=False), the one masking function (protocol/secrets.ts). */
export { maskUrl } from '../protocol/index.js'

export type FailoverStrategy = 'round-robin' | 'shuffle'

export const FAILOVER_STRATEGIES: readonly FailoverStrategy[] = ['round-robin', 'shuffle']

/** Celery's broker_failover_strategy: 'round-robin' (the default) or 'shuffle'. */
export function parseFailoverStrategy(value: unknown): FailoverStrategy {
  if (value === undefined || value === null || value === '') return 'round-robin'
  if (typeof value === 'string' && (FAILOVER_STRATEGIES as readonly string[]).includes(value)) return value as FailoverStrategy
  throw new BadBrokerUrlError(`broker_failover_strategy must be ${FAILOVER_STRATEGIES.join(' or ')}, got ${JSON.stringify(value)}`)
}

/**
 * Which URL of a failover list to use, and when a full round has failed.
 * kombu's Connection: start at the first URL, move to the next one on every
 * failed attempt without waiting until each URL has been tried once in this
 * round (`completes_cycle`), and only then back off. `shuffle` picks the next
 * at random, as kombu's shufflecycle does, but never the URL that just
 * failed, which kombu's may pick again.
 */
export class FailoverCycle<T> {
  private index = 0
  /** Attempts since the last success. */
  private failures = 0

  constructor(
    readonly entries: readonly T[],
    private readonly strategy: FailoverStrategy = 'round-robin',
    private readonly random: () => number = Math.random,
  ) {
    if (entries.length === 0) throw new RangeError('a failover cycle needs at least one entry')
  }

  get current(): T {
    return this.entries[this.index]!
  }

  get position(): number {
    return this.index
  }

  /**
   * The current entry failed: move to the next. True when that failure ends
   * a round (every entry tried once since the last success), the moment
   * kombu waits out its back-off interval before going on.
   */
  failed(): boolean {
    this.failures += 1
    const n = this.entries.length
    if (n > 1) {
      if (this.strategy === 'shuffle') this.index = (this.index + 1 + Math.floor(this.random() * (n - 1))) % n
      else this.index = (this.index + 1) % n
    }
    return this.failures % n === 0
  }

  /** Connected: the next loss starts a new round from the current entry. */
  succeeded(): void {
    this.failures = 0
  }
}

export interface ParsedBrokerUrl {
  scheme: string
  hostname: string
  port: number | undefined
  username: string | undefined
  password: string | undefined
  /** The path without its leading slash (AMQP vhost, Redis db, file directory). */
  path: string
}

/** Parses a broker URL; of a failover list, its first URL (kombu's Connection.hostname is `alt[0]`). */
export function parseBrokerUrl(url: string): ParsedBrokerUrl {
  if (url.includes(URL_LIST_SEPARATOR)) url = splitUrlList(url)[0]!
  const match = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/i.exec(url)
  if (!match) throw new BadBrokerUrlError(`not a broker URL: ${maskUrl(url)} (expected scheme://...)`)
  const scheme = match[1]!.toLowerCase()
  const rest = match[2]!
  if (scheme === 'file') {
    return { scheme, hostname: '', port: undefined, username: undefined, password: undefined, path: rest }
  }
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new BadBrokerUrlError(`malformed broker URL: ${maskUrl(url)}`)
  }
  const port = parsed.port === '' ? undefined : Number(parsed.port)
  return {
    scheme,
    hostname: parsed.hostname || 'localhost',
    port,
    username: parsed.username ? decodeURIComponent(parsed.username) : undefined,
    password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
    path: parsed.pathname.replace(/^\//, ''),
  }
}
