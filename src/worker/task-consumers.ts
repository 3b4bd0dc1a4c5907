// The worker's consumers of its task queues: each queue declared as Celery
// declares it (or as task_queues defines it, or as an events app's handler
// queue), purged under --purge, consumed with the worker's prefetch (a quorum
// queue's consumer with a static one of its own), and its deliveries counted,
// so the connection guard's watchdog can tell a consumer that receives nothing.
import type { BusWorker } from '../bus/index.js'
import { declareDefinition, isQuorumQueue, type QueueDefinition } from '../config/index.js'
import type { Consumer, Delivery, Transport } from '../transport/index.js'
import type { WatchedConsumer } from './connection-guard.js'
import type { QueueDeclaration } from './control/control-handlers.js'
import type { WorkerOptions } from './worker-options.js'

export interface TaskConsumersOptions {
  options: WorkerOptions
  transport: Transport
  /** An events app's side of the worker (once its bootstep ran): it declares and wraps its own handler queues. */
  bus: () => BusWorker | undefined
  deliver: (delivery: Delivery) => void | Promise<void>
  prefetchCount: () => number
  /** Consumers are re-created (by the watchdog) only while the worker runs. */
  running: () => boolean
}

interface Entry {
  decl: QueueDeclaration
  consumer: Consumer
  received: number
}

export class TaskConsumers {
  private readonly consumers = new Map<string, Entry>()

  constructor(private readonly c: TaskConsumersOptions) {}

  get declarations(): QueueDeclaration[] {
    return [...this.consumers.values()].map((entry) => entry.decl)
  }

  has(queue: string): boolean {
    return this.consumers.has(queue)
  }

  async add(decl: QueueDeclaration): Promise<void> {
    const { options: o, transport } = this.c
    if (this.consumers.has(decl.name)) return
    const bus = this.c.bus()?.owns(decl.name) ? this.c.bus() : undefined
    // Celery's add_task_queue: a queue task_queues defines is declared as defined, whatever add_consumer said.
    const definition = decl.definition ?? (o.app.queueSettings.defined.has(decl.name) ? o.resolveQueue?.(decl.name) : undefined)
    if (bus) await bus.declareHandlerQueue(decl.name)
    else if (definition) await declareDefinition(transport, definition)
    else {
      await transport.declareExchange({
        name: decl.exchange,
        type: decl.exchangeType as 'direct' | 'topic' | 'fanout',
        durable: true,
        autoDelete: false,
      })
      await transport.declareQueue({ name: decl.name, durable: true, exclusive: false, autoDelete: false })
      await transport.bindQueue(decl.name, decl.exchange, decl.routingKey)
    }
    if (o.purge) {
      const n = await transport.purge(decl.name)
      if (n) o.log.warning(`Purged ${n} messages from ${decl.name}`)
    }
    const entry: Entry = { decl, consumer: undefined as unknown as Consumer, received: 0 }
    const deliver = (d: Delivery) => {
      entry.received += 1
      return this.c.deliver(d)
    }
    const quorum = this.quorumConsumer(decl.name, definition)
    entry.consumer = await transport.consume(decl.name, bus ? bus.wrap(deliver) : deliver, {
      prefetch: this.c.prefetchCount(),
      ...(definition?.consumerArguments ? { arguments: definition.consumerArguments } : {}),
      ...(quorum ? { perConsumerPrefetch: true } : {}),
    })
    this.consumers.set(decl.name, entry)
  }

  /**
   * Celery 5.5's worker_detect_quorum_queues (default on): a quorum queue's
   * consumer takes a per-consumer, static prefetch (RabbitMQ refuses global
   * QoS there), so its ETA tasks wait in the broker's delayed delivery
   * rather than in the window, which could not widen for them.
   */
  private quorumConsumer(queue: string, definition: QueueDefinition | undefined): boolean {
    const { options: o, transport } = this.c
    if (transport.kind !== 'amqp' || !isQuorumQueue(definition)) return false
    if (o.app.options.conf?.worker_detect_quorum_queues === false) return false
    const queues = (o.etaDelay.brokerQueues ??= new Set())
    if (queues.size === 0) {
      o.log.info('Global QoS is disabled. Prefetch count in now static.')
      // Celery 5.5's DelayedDelivery bootstep: the ladder exists before the first ETA needs it.
      void transport
        .prepareDelayedDelivery?.()
        .catch((error: Error) => o.log.warning(`could not declare the delayed-delivery queues: ${error.message}`))
    }
    queues.add(queue)
    return true
  }

  async cancel(queue: string): Promise<void> {
    const entry = this.consumers.get(queue)
    if (!entry) return
    this.consumers.delete(queue)
    await entry.consumer.cancel()
  }

  async cancelAll(): Promise<void> {
    for (const name of [...this.consumers.keys()]) await this.cancel(name).catch(() => undefined)
  }

  async applyPrefetch(): Promise<void> {
    for (const { consumer } of this.consumers.values()) await consumer.setPrefetch(this.c.prefetchCount()).catch(() => undefined)
  }

  /** What the connection guard's watchdog sees of each consumer, and how it re-creates one. */
  watched(): WatchedConsumer[] {
    return [...this.consumers.values()].map((entry) => ({
      name: entry.decl.name,
      received: entry.received,
      recreate: async () => {
        if (this.consumers.get(entry.decl.name) !== entry || !this.c.running()) return
        this.consumers.delete(entry.decl.name)
        await entry.consumer.cancel().catch(() => undefined)
        await this.add(entry.decl)
      },
    }))
  }
}
