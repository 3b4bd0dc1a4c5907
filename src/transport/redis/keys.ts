// kombu 5.2.4's Redis key layout (spec §4.3–§4.6). Every name a Python peer reads
// or writes is built here, so the layout has one home.

/** kombu's `sep` transport option: the two bytes 0x06 0x16. */
export const SEP = '\x06\x16'
export const PRIORITY_STEPS = [0, 3, 6, 9] as const
export const MIN_PRIORITY = 0
export const MAX_PRIORITY = 9

export const UNACKED_KEY = 'unacked'
export const UNACKED_INDEX_KEY = 'unacked_index'
export const UNACKED_MUTEX_KEY = 'unacked_mutex'
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
export const STAGING_PREFIX = '_tsq.claiming.'
export const STAGING_OWNER_PREFIX = '_tsq.claiming-owner.'
export const STAGING_OWNER_TTL_MS = 60_000

export function stagingKey(loopId: string, sourceList: string): string {
  return `${STAGING_PREFIX}${loopId}|${sourceList}`
}

/** [loopId, sourceList] of a staging key, or undefined for another key. */
export function parseStagingKey(key: string): [string, string] | undefined {
  if (!key.startsWith(STAGING_PREFIX)) return undefined
  const rest = key.slice(STAGING_PREFIX.length)
  const bar = rest.indexOf('|')
  return bar <= 0 ? undefined : [rest.slice(0, bar), rest.slice(bar + 1)]
}

/** Clamp to 0..9 (non-integers count as 0), then take the largest step <= p (kombu `priority()`). */
export function priorityStep(priority: unknown): number {
  let p = typeof priority === 'number' && Number.isFinite(priority) ? Math.trunc(priority) : MIN_PRIORITY
  p = Math.max(MIN_PRIORITY, Math.min(MAX_PRIORITY, p))
  let step: number = PRIORITY_STEPS[0]
  for (const s of PRIORITY_STEPS) if (s <= p) step = s
  return step
}

/** The list holding queue Q's messages of step s: `Q` for 0, else `Q<sep>s`. */
export function listKey(queue: string, step: number): string {
  return step ? `${queue}${SEP}${step}` : queue
}

export function allListKeys(queue: string): string[] {
  return PRIORITY_STEPS.map((s) => listKey(queue, s))
}

/** The queue a popped list key belongs to (kombu `rsplit(sep, 1)[0]`). */
export function queueOfListKey(key: string): string {
  const at = key.lastIndexOf(SEP)
  return at === -1 ? key : key.slice(0, at)
}

/** BRPOP key order: every queue at step 0 first, then 3, 6, 9 (lower priority number served first). */
export function brpopKeys(queues: readonly string[]): string[] {
  return PRIORITY_STEPS.flatMap((s) => queues.map((q) => listKey(q, s)))
}

export function bindingKey(exchange: string): string {
  return `_kombu.binding.${exchange}`
}

export interface BindingMember {
  routingKey: string
  pattern: string
  queue: string
}

export function bindingMember({ routingKey, pattern, queue }: BindingMember): string {
  return [routingKey, pattern, queue].join(SEP)
}

export function parseBindingMember(member: string): BindingMember {
  const [routingKey = '', pattern = '', queue = ''] = member.split(SEP)
  return { routingKey, pattern, queue }
}

/** kombu `keyprefix_fanout`: pub/sub ignores databases, so channels carry `/{db}.`. */
export function fanoutPrefix(db: number): string {
  return `/${db}.`
}

/** The channel a fanout publish goes to (`fanout_patterns=True`). */
export function publishChannel(prefix: string, exchange: string, routingKey: string): string {
  return routingKey ? `${prefix}${exchange}/${routingKey}` : `${prefix}${exchange}`
}

function escapeGlob(s: string): string {
  return s.replace(/[*?[\]\\]/g, (c) => `\\${c}`)
}

/**
 * PSUBSCRIBE patterns for a queue bound to fanout exchange E with key B. kombu
 * subscribes `<prefix>E` (B empty) or `<prefix>E/<B, # as *>`. For B empty or `#`
 * tsq subscribes both forms, so that, as on AMQP, a catch-all binding hears
 * publishes with and without a routing key; Python publishers are unaffected.
 */
export function subscribePatterns(prefix: string, exchange: string, bindingKeyText: string): string[] {
  const base = `${escapeGlob(prefix)}${escapeGlob(exchange)}`
  if (bindingKeyText === '' || bindingKeyText === '#') return [base, `${base}/*`]
  return [`${base}/${escapeGlob(bindingKeyText).replace(/#/g, '*')}`]
}

/** The exchange a pub/sub channel names: strip the prefix up to the first `.`, keep what precedes `/`. */
export function exchangeOfChannel(channel: string): string {
  const rest = channel.startsWith('/') ? channel.slice(channel.indexOf('.') + 1) : channel
  const slash = rest.indexOf('/')
  return slash === -1 ? rest : rest.slice(0, slash)
}

const TOPIC_WILDCARDS: Record<string, string> = { '*': '.*?[^\\.]', '#': '.*?' }

/** kombu `TopicExchange.key_to_pattern`: the Python regex stored in the binding member. */
export function topicKeyToPattern(routingKey: string): string {
  // kombu `escape_regex(rkey, '.#*')`: every non-alphanumeric except . # * gets a backslash.
  const escaped = Array.from(routingKey, (c) => (/[\p{L}\p{N}]/u.test(c) || '.#*'.includes(c) ? c : `\\${c}`)).join('')
  return `^${escaped
    .split('.')
    .map((w) => TOPIC_WILDCARDS[w] ?? w)
    .join('\\.')}$`
}

const compiled = new Map<string, RegExp | null>()

/** `re.match(pattern, key)` for patterns written by kombu (or by us). */
export function topicMatches(pattern: string, routingKey: string): boolean {
  let re = compiled.get(pattern)
  if (re === undefined) {
    try {
      re = new RegExp(pattern)
    } catch {
      re = null
    }
    compiled.set(pattern, re)
  }
  if (!re) return false
  const m = re.exec(routingKey)
  return m !== null && m.index === 0
}
