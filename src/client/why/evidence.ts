// What `tsq why` gathers of one task, from every source at hand: the result
// backend, the events (a short listen, or the dashboard's state), the workers
// (query_task, scheduled, revoked, active_queues, Python's and tsq's alike) and
// the broker (the task's place in a Redis queue; a RabbitMQ queue's depth and
// consumers, which cannot be searched without taking its messages, and kombu's
// delay ladder). No verdict here: verdict.ts reads what this found.
import type { ResultMeta } from '../../protocol/index.js'
import { DELAYED_DELIVERY_LEVELS, delayedLevelName, type LocateResult, type NodeReply, type Transport } from '../../transport/index.js'
import { EventReceiver } from '../event-receiver.js'

/** How a worker holds the task: running, reserved (prefetched, waiting for a slot), waiting for its ETA, or for its rate limit's token. */
export type HeldState = 'active' | 'reserved' | 'scheduled' | 'rate-limited'

export interface Holder {
  node: string
  state: HeldState
  name: string | null
  /** The ETA it waits for (ISO), when scheduled. */
  eta: string | null
  /** The task's rate limit and the seconds until its next token (tsq workers say so; a Python worker's is inferred). */
  rateLimit: { rate: unknown; waitS: number | null } | null
  /** When it started (s since the epoch), when active. */
  timeStart: number | null
  workerPid: number | null
}

export interface EventsSeen {
  /** 'listen': a short listen on the events exchange; 'dashboard': what the dashboard's state keeps. */
  source: 'listen' | 'dashboard'
  /** Seconds listened, for a listen. */
  windowS: number | null
  /** The task's events, oldest first. */
  timeline: Array<{ type: string; timestamp: number; hostname: string | null }>
  state: string | null
  name: string | null
  worker: string | null
  routingKey: string | null
  /** Times (s since the epoch) of task-sent, task-received and task-started, where seen. */
  sent: number | null
  received: number | null
  started: number | null
}

export interface QueueLook {
  name: string
  depth: number | null
  /** Consumers: RabbitMQ's own count, else the workers that said they consume it (active_queues). */
  consumers: number | null
}

export interface WhyEvidence {
  taskId: string
  /** When it was looked at, s since the epoch. */
  at: number
  broker: { kind: Transport['kind']; url: string }
  /** null: no result backend configured (or one a third party cannot read, rpc://). */
  backend: { url: string; record: ResultMeta | null; error: string | null } | null
  events: EventsSeen
  workers: { replied: string[]; holders: Holder[]; revokedBy: string[] }
  queues: QueueLook[]
  /** A search of the queues for the message itself, where the broker allows one (Redis). */
  located: LocateResult | null
  /** Messages waiting in RabbitMQ's delay ladder (kombu's celery_delayed_*), where it exists. */
  delayLadder: number | null
}

export interface WhyInput {
  taskId: string
  /** Connected. */
  transport: Transport
  /** A remote-control broadcast to every worker, collecting the replies. */
  broadcast(method: string, args: Record<string, unknown>): Promise<NodeReply[]>
  backend: { url: string; read(taskId: string): Promise<ResultMeta | null> } | null
  /** Queues to look in besides those the events name and the workers consume (the app's default queue, -Q). */
  queues: readonly string[]
  /** The dashboard's events; absent: listen while the workers answer. */
  events?: EventsSeen
}

const TASK_EVENT_TIMES = { 'task-sent': 'sent', 'task-received': 'received', 'task-started': 'started' } as const

/** An events record built from the events one listen heard of the task. */
export function eventsFromList(events: readonly Record<string, unknown>[], windowS: number | null): EventsSeen {
  const seen: EventsSeen = {
    source: 'listen',
    windowS,
    timeline: [],
    state: null,
    name: null,
    worker: null,
    routingKey: null,
    sent: null,
    received: null,
    started: null,
  }
  for (const e of events) {
    const type = String(e.type)
    const timestamp = typeof e.timestamp === 'number' ? e.timestamp : 0
    const hostname = typeof e.hostname === 'string' ? e.hostname : null
    seen.timeline.push({ type, timestamp, hostname })
    if (typeof e.name === 'string') seen.name = e.name
    if (typeof e.routing_key === 'string' && e.routing_key) seen.routingKey = e.routing_key
    if (typeof e.queue === 'string' && e.queue) seen.routingKey = e.queue
    if (type !== 'task-sent' && hostname) seen.worker = hostname
    const at = TASK_EVENT_TIMES[type as keyof typeof TASK_EVENT_TIMES]
    if (at) seen[at] = timestamp
    seen.state = type.replace(/^task-/, '').toUpperCase()
  }
  return seen
}

/** Listens for the task's events while `during` runs. */
async function listenWhile<T>(
  transport: Transport,
  taskId: string,
  during: () => Promise<T>,
): Promise<[T, { events: Record<string, unknown>[]; windowS: number }]> {
  const heard: Record<string, unknown>[] = []
  const from = performance.now()
  const receiver = new EventReceiver(transport, {
    routingKey: 'task.#',
    onEvent: (e) => {
      if (e.uuid === taskId) heard.push(e)
    },
  })
  const started = await receiver.start().then(
    () => true,
    () => false,
  )
  try {
    const value = await during()
    return [value, { events: heard, windowS: Math.round(performance.now() - from) / 1000 }]
  } finally {
    if (started) await receiver.stop()
  }
}

function asRecord(value: unknown): Record<string, unknown> | null {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null)
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null)

function holderOf(node: string, state: HeldState, info: Record<string, unknown>, extra: Partial<Holder> = {}): Holder {
  return {
    node,
    state,
    name: str(info.name) ?? str(info.type),
    eta: null,
    rateLimit: null,
    timeStart: state === 'active' ? num(info.time_start) : null,
    workerPid: num(info.worker_pid),
    ...extra,
  }
}

/** What the workers said: query_task's answer (tsq adds `eta` and `rate_limit`), scheduled's entries, the revoked lists. */
export function readWorkerReplies(
  taskId: string,
  replies: { query: NodeReply[]; scheduled: NodeReply[]; revoked: NodeReply[] },
  now: number,
): WhyEvidence['workers'] {
  const replied = new Set<string>()
  const holders = new Map<string, Holder>()
  for (const reply of replies.query)
    for (const [node, body] of Object.entries(reply)) {
      replied.add(node)
      const entry = asRecord(body)?.[taskId]
      if (!Array.isArray(entry)) continue
      const [state, raw] = entry as [unknown, unknown]
      const info = asRecord(raw) ?? {}
      if (state === 'active') holders.set(node, holderOf(node, 'active', info))
      else if (state === 'reserved') {
        const eta = str(info.eta)
        const limit = asRecord(info.rate_limit)
        if (eta && Date.parse(eta) > now * 1000) holders.set(node, holderOf(node, 'scheduled', info, { eta }))
        else if (limit) holders.set(node, holderOf(node, 'rate-limited', info, { rateLimit: { rate: limit.rate, waitS: num(limit.wait) } }))
        else holders.set(node, holderOf(node, 'reserved', info))
      }
    }
  // Celery's query_task leaves out what waits on the worker's timer: a task's ETA. A Celery that holds a
  // rate-limited request on its timer lists it with no ETA; 5.2.6 keeps it in the limit's bucket, listed nowhere.
  for (const reply of replies.scheduled)
    for (const [node, body] of Object.entries(reply)) {
      replied.add(node)
      if (holders.has(node) || !Array.isArray(body)) continue
      for (const item of body) {
        const entry = asRecord(item)
        const request = asRecord(entry?.request)
        if (!entry || !request || request.id !== taskId) continue
        const eta = str(entry.eta)
        holders.set(
          node,
          eta && Date.parse(eta) > now * 1000
            ? holderOf(node, 'scheduled', request, { eta })
            : holderOf(node, 'rate-limited', request, { rateLimit: { rate: null, waitS: null } }),
        )
      }
    }
  const revokedBy: string[] = []
  for (const reply of replies.revoked)
    for (const [node, body] of Object.entries(reply)) {
      replied.add(node)
      if (Array.isArray(body) && body.includes(taskId)) revokedBy.push(node)
    }
  return { replied: [...replied].sort(), holders: [...holders.values()], revokedBy: revokedBy.sort() }
}

/** Per queue, the workers that said they consume it. */
function consumersByQueue(replies: NodeReply[]): Map<string, number> {
  const out = new Map<string, number>()
  for (const reply of replies)
    for (const body of Object.values(reply)) {
      if (!Array.isArray(body)) continue
      for (const q of body) {
        const name = str(asRecord(q)?.name)
        if (name) out.set(name, (out.get(name) ?? 0) + 1)
      }
    }
  return out
}

async function ladderDepth(transport: Transport): Promise<number | null> {
  if (transport.kind !== 'amqp' || !transport.checkQueue) return null
  let total: number | null = null
  for (let level = 0; level < DELAYED_DELIVERY_LEVELS; level += 1) {
    const status = await transport.checkQueue(delayedLevelName(level)).catch(() => null)
    if (status) total = (total ?? 0) + status.messageCount
  }
  return total
}

export async function gatherEvidence(input: WhyInput): Promise<WhyEvidence> {
  const { taskId, transport } = input
  const ask = (method: string, args: Record<string, unknown> = {}): Promise<NodeReply[]> => input.broadcast(method, args).catch(() => [])
  // The queues first, then the workers: a task that moves from a queue to a worker in between is still seen by the second look.
  const baseQueues = [...new Set(input.queues)]
  const firstLook = transport.locateMessage ? await transport.locateMessage(taskId, baseQueues) : null
  const askWorkers = () => Promise.all([ask('query_task', { ids: [taskId] }), ask('scheduled'), ask('revoked'), ask('active_queues')])
  const [[query, scheduled, revoked, activeQueues], heard] = input.events
    ? [await askWorkers(), null]
    : await listenWhile(transport, taskId, askWorkers)
  const at = Date.now() / 1000
  const events = input.events ?? eventsFromList(heard?.events ?? [], heard?.windowS ?? null)
  const workers = readWorkerReplies(taskId, { query, scheduled, revoked }, at)
  const consumers = consumersByQueue(activeQueues)
  const names = [...new Set([...baseQueues, ...(events.routingKey ? [events.routingKey] : []), ...consumers.keys()])]
  // A queue only the workers or the events named is searched now.
  const extra = names.filter((n) => !baseQueues.includes(n))
  let located = firstLook
  if (transport.locateMessage && !firstLook?.found && extra.length > 0) {
    const more = await transport.locateMessage(taskId, extra)
    located = {
      found: more.found,
      depths: { ...firstLook?.depths, ...more.depths },
      scanned: (firstLook?.scanned ?? 0) + more.scanned,
      truncated: (firstLook?.truncated ?? false) || more.truncated,
    }
  }
  const queues: QueueLook[] = []
  for (const name of names) {
    if (located && name in located.depths) {
      queues.push({ name, depth: located.depths[name]!, consumers: consumers.get(name) ?? 0 })
      continue
    }
    const status = await transport.checkQueue?.(name).catch(() => null)
    queues.push({ name, depth: status?.messageCount ?? null, consumers: status?.consumerCount ?? consumers.get(name) ?? 0 })
  }
  let backend: WhyEvidence['backend'] = null
  if (input.backend) {
    try {
      backend = { url: input.backend.url, record: await input.backend.read(taskId), error: null }
    } catch (error) {
      backend = { url: input.backend.url, record: null, error: (error as Error).message }
    }
  }
  return {
    taskId,
    at,
    broker: { kind: transport.kind, url: transport.displayUrl },
    backend,
    events,
    workers,
    queues,
    located,
    // The ladder only where nothing else holds the task: 28 passive looks.
    delayLadder: workers.holders.length === 0 && !located?.found ? await ladderDepth(transport) : null,
  }
}
