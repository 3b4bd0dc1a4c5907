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
    for (const t of transports) await t.close().catch(() => undefined)
    if (queues.length === 0) return
    const sweeper = await this.factory()
    try {
      await sweeper.connect()
      for (const q of queues) await sweeper.deleteQueue(q).catch(() => undefined)
    } finally {
      await sweeper.close().catch(() => undefined)
    }
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
