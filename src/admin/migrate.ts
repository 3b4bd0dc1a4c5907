// `tsq migrate`: moves task messages from one broker to another, any kind to
// any kind, over the transport contract only. Each message is published whole
// (body, headers, properties) and acked on the source only once the
// destination has it (a publisher confirm on RabbitMQ, the write's reply on
// Redis and file), so a migrate killed at any point loses nothing: what it
// held unacked goes back to the source, and at most the messages in flight
// (the prefetch window) arrive twice.
import { BrokerRequestError, type Delivery, type Transport } from '../transport/index.js'
import { codedError } from '../protocol/index.js'

export interface QueueRoute {
  from: string
  to: string
}

export interface MigrateOptions {
  source: Transport
  destination: Transport
  queues: readonly QueueRoute[]
  /** -n: stop after this many; null: no limit. */
  limit: number | null
  /** -t: stop once no message came for this many seconds (unless forever). */
  timeoutSeconds: number
  /** -a: ack each message on the source once the destination confirmed it (a move); without it a copy. */
  ackMessages: boolean
  /** -T: only these task names; the others stay on the source. */
  tasks: ReadonlySet<string> | null
  /** -F: keep going until stopped (signal). */
  forever: boolean
  /** Messages in flight at once (publish awaiting its confirm). */
  window?: number
  onMigrated?: (task: MigratedTask) => void
  /** Resolves when the caller wants to stop (a signal): what is in flight finishes first. */
  stopRequested?: Promise<void>
}

export interface MigratedTask {
  /** 1-based, in the order the destination confirmed them. */
  count: number
  /** Ready messages in the source queues when migrate began (null where a broker cannot tell). */
  total: number | null
  name: string
  id: string
  queue: string
}

export interface MigrateResult {
  migrated: number
  /** Messages left on the source by -T. */
  skipped: number
  total: number | null
}

export class MigrateError extends codedError('BROKER_UNREACHABLE') {}

/** `name` and `id` of a task message: protocol 2 in the headers, protocol 1 in the JSON body. */
export function taskIdentity(delivery: Pick<Delivery, 'body' | 'properties'>): { name: string; id: string } {
  const headers = delivery.properties.headers
  if (typeof headers.task === 'string' && typeof headers.id === 'string') return { name: headers.task, id: headers.id }
  if (delivery.properties.contentType === 'application/json') {
    try {
      const body = JSON.parse(delivery.body.toString('utf8')) as { task?: unknown; id?: unknown }
      if (typeof body.task === 'string' && typeof body.id === 'string') return { name: body.task, id: body.id }
    } catch {
      // Not a task message: moved all the same, under no name.
    }
  }
  return { name: '?', id: delivery.properties.correlationId ?? '?' }
}

/** Celery's -Q: `a,b` or `a:x,b:y` (a is moved into x). */
export function parseQueueRoutes(spec: string): QueueRoute[] {
  return spec
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const [from, to] = part.split(':')
      return { from: from!, to: to || from! }
    })
}

export async function migrate(o: MigrateOptions): Promise<MigrateResult> {
  // Both brokers' checks read only, so they go out together: a round trip or more less before the first task moves.
  const [sources, destinations] = await Promise.allSettled([
    Promise.all(o.queues.map((q) => (o.source.checkQueue ? o.source.checkQueue(q.from) : null))),
    Promise.all(o.queues.map((q) => (o.destination.checkQueue ? o.destination.checkQueue(q.to) : null))),
  ])
  if (sources.status === 'rejected') throw sources.reason
  let total: number | null = 0
  for (const [i, q] of o.queues.entries()) {
    const status = sources.value[i] ?? null
    // Said here, naming the broker, rather than as the consumer's 404 (RabbitMQ) or a bare `no queue` (file://).
    if (o.source.checkQueue && status === null) throw new BrokerRequestError('NOT_FOUND', `no queue '${q.from}' on ${o.source.displayUrl}`)
    if (status === null || total === null) total = status === null ? null : total
    else total += status.messageCount
  }
  if (destinations.status === 'rejected') throw destinations.reason
  const declared = new Set<string>()
  for (const [i, q] of o.queues.entries()) {
    // An existing queue is left as it is: declaring it again with other arguments is a 406 on RabbitMQ.
    if ((destinations.value[i] ?? null) !== null || declared.has(q.to)) continue
    await o.destination.declareQueue({ name: q.to, durable: true, exclusive: false, autoDelete: false })
    declared.add(q.to)
  }
  const window = o.window ?? 512
  let reserved = 0
  let migrated = 0
  let skipped = 0
  let inFlight = 0
  let lastActivity: number
  let failure: Error | null = null
  let stopping = false
  let wake: () => void = () => undefined

  const handle = async (delivery: Delivery, to: string) => {
    lastActivity = Date.now()
    const { name, id } = taskIdentity(delivery)
    if (stopping || (o.limit !== null && reserved >= o.limit)) return
    if (o.tasks && !o.tasks.has(name)) {
      // Left unacked: it goes back to the source when migrate closes, as Celery's filter leaves it.
      skipped += 1
      return
    }
    reserved += 1
    inFlight += 1
    try {
      // The default exchange routes by queue name: the destination need not have the source's bindings.
      await o.destination.publish('', to, { body: delivery.body, properties: delivery.properties }, { confirm: true })
      if (o.ackMessages) await delivery.ack()
      migrated += 1
      o.onMigrated?.({ count: migrated, total, name, id, queue: delivery.queue })
    } catch (error) {
      failure ??= error as Error
      stopping = true
    } finally {
      inFlight -= 1
      lastActivity = Date.now()
      wake()
    }
  }

  const readyOnSource = async (): Promise<number> => {
    let ready = 0
    for (const q of o.queues) ready += (o.source.checkQueue ? await o.source.checkQueue(q.from) : null)?.messageCount ?? 0
    return ready
  }

  // Skipped messages stay unacked, so with -T (or a copy) the window would fill with them: no window then.
  const prefetch = o.tasks || !o.ackMessages ? 0 : window
  const consumers = []
  for (const q of o.queues) consumers.push(await o.source.consume(q.from, (d) => handle(d, q.to), { prefetch }))
  // The idle clock starts once every consumer is in place.
  lastActivity = Date.now()
  o.stopRequested?.then(() => {
    stopping = true
    wake()
  })
  try {
    for (;;) {
      const limitReached = o.limit !== null && migrated >= o.limit
      let idle = !o.forever && inFlight === 0 && Date.now() - lastActivity >= o.timeoutSeconds * 1000
      // A busy machine can pause deliveries past -t: idle means nothing is left ready on the source too.
      if (idle && !stopping && !limitReached && (await readyOnSource()) > 0) {
        idle = false
        lastActivity = Date.now()
      }
      if (inFlight === 0 && (stopping || limitReached || idle)) break
      await new Promise<void>((resolve) => {
        wake = resolve
        setTimeout(resolve, Math.min(200, Math.max(10, o.timeoutSeconds * 1000)))
      })
    }
  } finally {
    for (const consumer of consumers) await consumer.cancel().catch(() => undefined)
  }
  if (failure)
    throw new MigrateError(`migrate stopped after ${migrated} ${migrated === 1 ? 'task' : 'tasks'}: ${(failure as Error).message}`, {
      cause: failure,
    })
  return { migrated, skipped, total }
}
