// Topic matching, the two ways a virtual broker can do it. On Redis a binding
// stores kombu's regex (`TopicExchange.key_to_pattern`) and a publish is routed
// by that regex, whoever wrote it, so tsq and Python route alike; the file
// broker, which only tsq reads, matches binding keys by AMQP's word rules.

/** How a broker's topic exchanges turn a binding key into what they store, and match a routing key against it. */
export interface TopicRule {
  /** What a binding to a topic exchange stores beside its key (kombu's `prepare_bind`). */
  pattern(bindingKey: string): string
  matches(pattern: string, routingKey: string): boolean
}

const KOMBU_WILDCARDS: Record<string, string> = { '*': '.*?[^\\.]', '#': '.*?' }
const compiled = new Map<string, RegExp | null>()

/**
 * kombu 5.2.4's `TopicExchange`: a binding key becomes a Python regex, and a
 * routing key matches it as `re.match` does (anchored at the start). Its
 * words are not AMQP's (`a.*` matches `a.b.c`; `a.#` does not match `a`), and
 * a tsq publisher must route as a Python one does.
 */
export const KOMBU_TOPIC: TopicRule = {
  pattern(bindingKey) {
    // kombu `escape_regex(rkey, '.#*')`: every non-alphanumeric except . # * gets a backslash.
    const escaped = Array.from(bindingKey, (c) => (/[\p{L}\p{N}]/u.test(c) || '.#*'.includes(c) ? c : `\\${c}`)).join('')
    return `^${escaped
      .split('.')
      .map((w) => KOMBU_WILDCARDS[w] ?? w)
      .join('\\.')}$`
  },
  matches(pattern, routingKey) {
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
  },
}

/** AMQP's topic matching: words split on '.', `*` is exactly one word, `#` zero or more. The pattern is the binding key. */
export const AMQP_TOPIC: TopicRule = {
  pattern: (bindingKey) => bindingKey,
  matches(pattern, routingKey) {
    const p = pattern.split('.')
    const k = routingKey.split('.')
    const match = (i: number, j: number): boolean => {
      if (i === p.length) return j === k.length
      if (p[i] === '#') {
        for (let n = j; n <= k.length; n++) if (match(i + 1, n)) return true
        return false
      }
      if (j === k.length) return false
      return (p[i] === '*' || p[i] === k[j]) && match(i + 1, j + 1)
    }
    return match(0, 0)
  },
}
