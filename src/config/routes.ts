// Celery's task_routes: where a task goes when the sender names no queue.
// `{ 'proj.add': 'math', 'proj.images.*': { queue: 'images' } }`, or a list of
// such maps tried in order (Celery's MapRoute per entry): an exact name wins
// over the map's glob patterns, which are tried in the order given.

export interface Route {
  queue: string
  exchange?: string
  routingKey?: string
}

/** The route a task_routes setting gives `taskName`, or undefined when none matches. */
export function routeTask(taskName: string, routes: unknown): Route | undefined {
  for (const map of Array.isArray(routes) ? routes : [routes]) {
    if (!map || typeof map !== 'object') continue
    const entries = Object.entries(map as Record<string, unknown>)
    const exact = entries.find(([pattern]) => pattern === taskName)
    const hit = exact ?? entries.find(([pattern]) => /[*?[]/.test(pattern) && fnmatch(taskName, pattern))
    const route = hit && destination(hit[1])
    if (route) return route
  }
  return undefined
}

export interface SendDestination {
  queue?: string
  exchange?: string
  routingKey?: string
}

/**
 * Where one send goes: what the sender named wins; when it named no queue,
 * the task's route fills in what it left out (Celery's Router merges the
 * route under the send's options). `routeOf` is asked only then.
 */
export function routedSend(given: SendDestination, routeOf: () => Route | undefined): SendDestination {
  if (given.queue !== undefined) return given
  const route = routeOf()
  return { queue: route?.queue, exchange: given.exchange ?? route?.exchange, routingKey: given.routingKey ?? route?.routingKey }
}

/** A route's value: a queue name, or `{ queue, exchange, routing_key }` as Celery writes it. */
function destination(value: unknown): Route | undefined {
  if (typeof value === 'string' && value) return { queue: value }
  if (!value || typeof value !== 'object') return undefined
  const { queue, exchange, routing_key } = value as Record<string, unknown>
  if (typeof queue !== 'string' || !queue) return undefined
  return {
    queue,
    ...(typeof exchange === 'string' ? { exchange } : {}),
    ...(typeof routing_key === 'string' ? { routingKey: routing_key } : {}),
  }
}

const compiled = new Map<string, RegExp>()

/**
 * Python's fnmatch (what Celery's MapRoute uses for glob keys): `*`, `?`,
 * `[seq]`, `[!seq]`, and nothing special about dots or slashes. Written out
 * rather than taken from a glob library: those follow shell path rules, where
 * `*` stops at `/` and a leading dot is hidden, which task names do not have.
 */
export function fnmatch(name: string, pattern: string): boolean {
  let re = compiled.get(pattern)
  if (!re) {
    let source = ''
    for (let i = 0; i < pattern.length; i++) {
      const c = pattern[i]!
      if (c === '*') source += '.*'
      else if (c === '?') source += '.'
      else if (c === '[') {
        const end = pattern.indexOf(']', i + 2)
        if (end === -1) {
          source += '\\['
          continue
        }
        let set = pattern.slice(i + 1, end).replace(/\\/g, '\\\\')
        if (set.startsWith('!')) set = `^${set.slice(1)}`
        source += `[${set}]`
        i = end
      } else source += c.replace(/[.+^${}()|\\\]]/g, '\\$&')
    }
    re = new RegExp(`^${source}$`, 's')
    compiled.set(pattern, re)
  }
  return re.test(name)
}
