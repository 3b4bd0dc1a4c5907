// Topology is data: every exchange, queue and binding declared through the
// transport is recorded here and declared again, in order, after a reconnect
// (rabbitmq-client's `_setup`), before consumers start again.
import type { Channel } from 'amqplib'
import type { ExchangeSpec, QueueSpec, TopologySpec } from '../transport.js'
import { toQueueArguments } from './properties.js'

export interface BindingSpec {
  queue: string
  exchange: string
  routingKey: string
}

function bindingKey(b: BindingSpec): string {
  return JSON.stringify([b.queue, b.exchange, b.routingKey])
}

export async function assertExchange(channel: Channel, spec: ExchangeSpec): Promise<void> {
  await channel.assertExchange(spec.name, spec.type, { durable: spec.durable, autoDelete: spec.autoDelete })
}

export async function assertQueue(channel: Channel, spec: QueueSpec): Promise<{ messageCount: number }> {
  const reply = await channel.assertQueue(spec.name, queueOptions(spec))
  return { messageCount: reply.messageCount }
}

/** amqplib's assertQueue options for `spec`. */
export function queueOptions(spec: QueueSpec): Record<string, unknown> {
  const args = toQueueArguments(spec.arguments)
  return { durable: spec.durable, exclusive: spec.exclusive, autoDelete: spec.autoDelete, ...(args ? { arguments: args } : {}) }
}

/** Declares `t` one method per round trip, through amqplib's own calls (tricks/nowait-declare.ts does it in one). */
export async function declareTopologyPlain(channel: Channel, t: TopologySpec): Promise<void> {
  // The default exchange and amq.* exist already and may not be declared by clients.
  for (const ex of t.exchanges) if (ex.name !== '' && !ex.name.startsWith('amq.')) await assertExchange(channel, ex)
  await channel.assertQueue(t.queue.name, queueOptions(t.queue))
  // Every queue is bound to the default exchange by name; RabbitMQ refuses explicit binds to it.
  for (const b of t.bindings) if (b.exchange !== '') await channel.bindQueue(t.queue.name, b.exchange, b.routingKey)
}

export class TopologyRegistry {
  private readonly exchanges = new Map<string, ExchangeSpec>()
  private readonly queues = new Map<string, QueueSpec>()
  private readonly bindings = new Map<string, BindingSpec>()

  addExchange(spec: ExchangeSpec): void {
    this.exchanges.set(spec.name, { ...spec })
  }

  addQueue(spec: QueueSpec): void {
    this.queues.set(spec.name, { ...spec, ...(spec.arguments ? { arguments: { ...spec.arguments } } : {}) })
  }

  hasQueue(name: string): boolean {
    return this.queues.has(name)
  }

  queue(name: string): QueueSpec | undefined {
    return this.queues.get(name)
  }

  removeQueue(name: string): void {
    this.queues.delete(name)
    for (const [key, b] of this.bindings) if (b.queue === name) this.bindings.delete(key)
  }

  bindingsOf(queue: string): BindingSpec[] {
    return [...this.bindings.values()].filter((b) => b.queue === queue)
  }

  addBinding(b: BindingSpec): void {
    this.bindings.set(bindingKey(b), { ...b })
  }

  removeBinding(b: BindingSpec): void {
    this.bindings.delete(bindingKey(b))
  }

  /**
   * Declares everything again. A failing entity (someone redeclared it with
   * other flags meanwhile) closes the channel; `openChannel` gives a fresh one
   * and the failure is reported, so one bad entity does not stop the rest.
   */
  async replay(openChannel: () => Promise<Channel>, report: (err: unknown, what: string) => void): Promise<void> {
    let channel = await openChannel()
    const attempt = async (what: string, run: (ch: Channel) => Promise<unknown>): Promise<void> => {
      try {
        await run(channel)
      } catch (err) {
        report(err, what)
        channel = await openChannel()
      }
    }
    for (const spec of this.exchanges.values()) {
      await attempt(`redeclare exchange '${spec.name}'`, (ch) => assertExchange(ch, spec))
    }
    for (const spec of this.queues.values()) {
      await attempt(`redeclare queue '${spec.name}'`, (ch) => assertQueue(ch, spec))
    }
    for (const b of this.bindings.values()) {
      await attempt(`rebind queue '${b.queue}' to '${b.exchange}'`, (ch) => ch.bindQueue(b.queue, b.exchange, b.routingKey))
    }
    await channel.close().catch(() => undefined)
  }
}
