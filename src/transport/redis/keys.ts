// kombu 5.2.4's Redis key layout (spec §4.3–§4.6), with the transport options
// that change it (kombu/transport/redis.py Channel: global_keyprefix, sep,
// priority_steps, fanout_prefix, fanout_patterns). Every key and pub/sub
// channel name tsq's Redis broker reads or writes is built by a RedisKeys, so
// a tsq process and a Python one configured alike meet on the same names.

/** kombu's default `sep` transport option: the two bytes 0x06 0x16. */
export const DEFAULT_SEP = '\x06\x16'
export const DEFAULT_PRIORITY_STEPS: readonly number[] = [0, 3, 6, 9]
/** kombu virtual Channel's min_priority / max_priority: a message's priority is clamped to these first. */
const MIN_PRIORITY = 0
const MAX_PRIORITY = 9

/**
 * Seconds a tsq restorer holds `unacked_mutex` at most. kombu's
 * `unacked_mutex_expire` is 300: a worker killed with -9 mid-pass then stops
 * every restore, its own workers' and Python's, for five minutes, and what the
 * dead worker held waits that long. A pass takes milliseconds, and each restore
 * in it is an atomic compare-and-set (RESTORE_SCRIPT), so two passes meeting
 * after an expiry cannot restore one message twice.
 */
export const UNACKED_MUTEX_EXPIRE = 20

/**
 * tsq-only keys for the blocking claim: a consumer loop moves a message
 * atomically (BLMOVE) from a queue list into its own staging list, then records
 * it in `unacked`. A staging list whose owner key has expired belonged to a
 * dead process; restore_visible moves its messages back to their source list.
 */
const STAGING_PREFIX = '_tsq.claiming.'
const STAGING_OWNER_PREFIX = '_tsq.claiming-owner.'
export const STAGING_OWNER_TTL_MS = 60_000

export interface RedisKeyOptions {
  /** kombu `global_keyprefix`: put before every key and every pub/sub channel (kombu 5.2's PrefixedStrictRedis). */
  globalKeyprefix?: string
  /** kombu `sep`: between a queue and its priority step, and between a binding member's fields. */
  sep?: string
  /** kombu `priority_steps`. */
  prioritySteps?: readonly number[]
  /** kombu `fanout_prefix`: true is `/{db}.`, false none, a string that (with `{db}` formatted). */
  fanoutPrefix?: boolean | string
  /** kombu `fanout_patterns`: false publishes and subscribes fanout on the exchange's name alone. */
  fanoutPatterns?: boolean
  /** kombu `unacked_key`, `unacked_index_key`, `unacked_mutex_key` (before the global prefix). */
  unackedKey?: string
  unackedIndexKey?: string
  unackedMutexKey?: string
}

export interface BindingMember {
  routingKey: string
  pattern: string
  queue: string
}

/** Python's bisect.bisect_right, so odd priority_steps pick the step kombu picks. */
function bisectRight(list: readonly number[], x: number): number {
  let lo = 0
  let hi = list.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (x < list[mid]!) hi = mid
    else lo = mid + 1
  }
  return lo
}

/** kombu `_get_message_priority`: int(priority) clamped to 0..9; what int() refuses counts as 0. */
function messagePriority(priority: unknown): number {
  let p: number
  if (typeof priority === 'number' && Number.isFinite(priority)) p = Math.trunc(priority)
  else if (typeof priority === 'boolean') p = priority ? 1 : 0
  else if (typeof priority === 'string' && /^\s*[+-]?\d+\s*$/.test(priority)) p = Number.parseInt(priority, 10)
  else return MIN_PRIORITY
  return Math.max(MIN_PRIORITY, Math.min(MAX_PRIORITY, p))
}

function escapeGlob(s: string): string {
  return s.replace(/[*?[\]\\]/g, (c) => `\\${c}`)
}

export class RedisKeys {
  readonly globalKeyprefix: string
  readonly sep: string
  readonly steps: readonly number[]
  /** What fanout channels start with after the global prefix: `/{db}.` by default. */
  readonly fanoutPrefix: string
  readonly fanoutPatterns: boolean
  readonly unacked: string
  readonly unackedIndex: string
  readonly unackedMutex: string

  constructor(db: number, options: RedisKeyOptions = {}) {
    this.globalKeyprefix = options.globalKeyprefix ?? ''
    this.sep = options.sep ?? DEFAULT_SEP
    this.steps = options.prioritySteps ?? DEFAULT_PRIORITY_STEPS
    const fanout = options.fanoutPrefix ?? true
    // kombu formats `{db}` into whatever prefix it ends up with (Channel._get_pool).
    this.fanoutPrefix = (fanout === true ? '/{db}.' : fanout === false ? '' : fanout).replace(/\{db\}/g, String(db))
    this.fanoutPatterns = options.fanoutPatterns ?? true
    this.unacked = this.key(options.unackedKey ?? 'unacked')
    this.unackedIndex = this.key(options.unackedIndexKey ?? 'unacked_index')
    this.unackedMutex = this.key(options.unackedMutexKey ?? 'unacked_mutex')
  }

  /** A key of kombu's (or tsq's own) under the global prefix. */
  key(name: string): string {
    return this.globalKeyprefix + name
  }

  /** kombu `priority()`: the step a message priority goes to (`steps[bisect(steps, p) - 1]`, Python's index -1 included). */
  step(priority: unknown): number {
    return this.stepOf(messagePriority(priority))
  }

  private stepOf(n: number): number {
    const at = bisectRight(this.steps, n) - 1
    return this.steps[at < 0 ? this.steps.length + at : at] ?? 0
  }

  /** kombu `_q_for_pri`: the list of queue Q's messages of that step: `Q` for 0, else `Q<sep>step`. */
  list(queue: string, step: number): string {
    return this.key(step ? `${queue}${this.sep}${step}` : queue)
  }

  /** Every list of a queue, one per step. */
  lists(queue: string): string[] {
    return [...new Set(this.steps.map((s) => this.list(queue, this.stepOf(s))))]
  }

  /** BRPOP key order: every queue at the first step, then the next step... (kombu `_brpop_start`). */
  brpopKeys(queues: readonly string[]): string[] {
    return this.steps.flatMap((s) => queues.map((q) => this.list(q, this.stepOf(s))))
  }

  /** The queue a popped list key belongs to (kombu strips the prefix, then `rsplit(sep, 1)[0]`). */
  queueOfList(key: string): string {
    const name = key.startsWith(this.globalKeyprefix) ? key.slice(this.globalKeyprefix.length) : key
    const at = name.lastIndexOf(this.sep)
    return at === -1 ? name : name.slice(0, at)
  }

  binding(exchange: string): string {
    return this.key(`_kombu.binding.${exchange}`)
  }

  bindingMember({ routingKey, pattern, queue }: BindingMember): string {
    return [routingKey, pattern, queue].join(this.sep)
  }

  parseBindingMember(member: string): BindingMember {
    const [routingKey = '', pattern = '', queue = ''] = member.split(this.sep)
    return { routingKey, pattern, queue }
  }

  /** kombu `_get_publish_topic`: the channel a fanout publish goes to. */
  publishChannel(exchange: string, routingKey: string): string {
    const topic = routingKey && this.fanoutPatterns ? `${this.fanoutPrefix}${exchange}/${routingKey}` : `${this.fanoutPrefix}${exchange}`
    return this.key(topic)
  }

  /**
   * PSUBSCRIBE patterns for a queue bound to fanout exchange E with key B. kombu
   * subscribes its publish topic for (E, B with # as *). For B empty or `#`
   * tsq subscribes both `E` and `E/*`, so that, as on AMQP, a catch-all binding
   * hears publishes with and without a routing key; Python publishers are unaffected.
   */
  subscribePatterns(exchange: string, bindingKey: string): string[] {
    const base = `${escapeGlob(this.key(this.fanoutPrefix))}${escapeGlob(exchange)}`
    if (!this.fanoutPatterns) return [base]
    if (bindingKey === '' || bindingKey === '#') return [base, `${base}/*`]
    return [`${base}/${escapeGlob(bindingKey).replace(/#/g, '*')}`]
  }

  stagingKey(loopId: string, sourceList: string): string {
    return this.key(`${STAGING_PREFIX}${loopId}|${sourceList}`)
  }

  /** SCAN MATCH pattern of every staging list under this prefix. */
  get stagingPattern(): string {
    return `${escapeGlob(this.key(STAGING_PREFIX))}*`
  }

  /** [loopId, sourceList] of a staging key, or undefined for another key. */
  parseStagingKey(key: string): [string, string] | undefined {
    const head = this.key(STAGING_PREFIX)
    if (!key.startsWith(head)) return undefined
    const rest = key.slice(head.length)
    const bar = rest.indexOf('|')
    return bar <= 0 ? undefined : [rest.slice(0, bar), rest.slice(bar + 1)]
  }

  stagingOwner(loopId: string): string {
    return this.key(STAGING_OWNER_PREFIX + loopId)
  }
}
