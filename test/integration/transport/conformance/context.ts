// Shared plumbing for the conformance cases: transports and queues opened by a
// case are tracked and torn down after it, so no queue outlives its test.
import type { Delivery, MessageProperties, OutgoingMessage, QueueSpec, Transport } from '../../../../src/transport/transport.js'
import { uniqueName, waitFor } from '../../../helpers/brokers.js'

export type TransportKind = 'amqp' | 'redis' | 'file'

export interface ConformanceOptions {
  kind: TransportKind
  /** Drops this process's broker connections for real (no-op for file). */
  killConnections: () => Promise<void>
  /**
   * URL a child process (and the consumer that takes over from it) uses for the
   * crash case; for Redis it carries a short `?visibility_timeout`. Absent skips the case.
   */
  crashUrl?: string
  /** Skip the whole suite (broker unreachable), with this reason. */
  skip?: string | false
}

/** Generous bound on waits for something that should happen; never a timing assertion. */
export const WAIT_MS = 15_000
/** How long to keep listening when checking that something does NOT arrive. */
export const QUIET_MS = 500

const CLEANUP_MS = 10_000

/** True if the promise settles (either way) within `ms`. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms)
  })
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      deadline,
    ])
  } finally {
    clearTimeout(timer)
  }
}

export class ConformanceContext {
  private transports: Transport[] = []
  private queues: string[] = []

  constructor(
    readonly suite: string,
    private readonly factory: () => Promise<Transport>,
    readonly opts: ConformanceOptions,
  ) {}

  /** A connected transport that is closed after the case. */
  async open(factory: () => Promise<Transport> = this.factory): Promise<Transport> {
    const transport = await factory()
    this.transports.push(transport)
    await transport.connect()
    return transport
  }

  /** Declares a queue with a unique name, deleted after the case. */
  async queue(transport: Transport, spec: Partial<QueueSpec> = {}): Promise<string> {
    const name = spec.name ?? uniqueName(`tsq-conf-${this.opts.kind}`)
    this.queues.push(name)
    await transport.declareQueue({ name, durable: false, exclusive: false, autoDelete: false, ...spec })
    return name
  }

  /** Registers an entity name for deletion (queues declared by other means). */
  track(queue: string): void {
    this.queues.push(queue)
  }

  async cleanup(): Promise<void> {
    const queues = this.queues
    const transports = this.transports
    this.queues = []
    this.transports = []
    // Close first: a live consumer whose queue vanishes would declare it again.
    const hung: string[] = []
    for (const t of transports) {
      if (!(await settlesWithin(t.close(), CLEANUP_MS))) hung.push(`close() of ${t.displayUrl}`)
    }
    if (queues.length > 0) {
      const sweeper = await this.factory()
      const sweep = async (): Promise<void> => {
        await sweeper.connect()
        for (const q of queues) await sweeper.deleteQueue(q).catch(() => undefined)
      }
      if (!(await settlesWithin(sweep(), CLEANUP_MS))) hung.push(`deleting ${queues.length} queue(s)`)
      if (!(await settlesWithin(sweeper.close(), CLEANUP_MS))) hung.push('close() of the sweeper')
    }
    // A hung close is a conformance failure in itself, but must not hang the run.
    if (hung.length > 0) throw new Error(`${this.suite}: cleanup did not finish within ${CLEANUP_MS} ms: ${hung.join('; ')}`)
  }
}

export function message(body: string, properties: Partial<MessageProperties> = {}): OutgoingMessage {
  return {
    body: Buffer.from(body),
    properties: {
      contentType: 'application/json',
      contentEncoding: 'utf-8',
      headers: {},
      deliveryMode: 2,
      priority: 0,
      ...properties,
    },
  }
}

/** Records deliveries in arrival order. */
export class Collector {
  readonly deliveries: Delivery[] = []
  readonly handler = (delivery: Delivery): void => {
    this.deliveries.push(delivery)
  }

  bodies(): string[] {
    return this.deliveries.map((d) => d.body.toString())
  }

  async waitForCount(count: number, what = `${count} deliveries`): Promise<void> {
    await waitFor(() => this.deliveries.length >= count, { timeoutMs: WAIT_MS, what: `${what} (have ${this.deliveries.length})` })
  }
}

export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

export function once(transport: Transport, event: 'connection:lost' | 'connection:restored'): { seen: () => boolean } {
  let seen = false
  transport.on(event, () => {
    seen = true
  })
  return { seen: () => seen }
}
