// kombu's virtual exchange table on Redis (spec §4.4): exchange types live only in
// this process; bindings live in `_kombu.binding.<exchange>` sets shared by all.
import type { Redis } from 'ioredis'
import type { ExchangeType } from '../transport.js'
import { bindingKey, bindingMember, parseBindingMember, topicKeyToPattern, topicMatches } from './keys.js'

/** Celery declares these as fanout on Redis; a process that never declared them still routes right. */
const WELL_KNOWN_FANOUT = new Set(['celery.pidbox', 'celeryev'])

export interface FanoutBinding {
  exchange: string
  routingKey: string
}

export class Router {
  private readonly types = new Map<string, ExchangeType>()
  /** Queues bound to a fanout exchange in this process: consumed with PSUBSCRIBE, not BRPOP. */
  readonly fanoutBindings = new Map<string, FanoutBinding[]>()
  /** Bindings made here, so deleteQueue can SREM them (kombu's `state.queue_bindings`). */
  private readonly queueBindings = new Map<string, Set<string>>()

  constructor(private readonly conn: Redis) {}

  declare(exchange: string, type: ExchangeType): void {
    this.types.set(exchange, type)
  }

  /** kombu `typeof(exchange, default='direct')`. */
  typeOf(exchange: string): ExchangeType {
    return this.types.get(exchange) ?? (WELL_KNOWN_FANOUT.has(exchange) ? 'fanout' : 'direct')
  }

  private member(queue: string, exchange: string, routingKey: string): string {
    const pattern = this.typeOf(exchange) === 'topic' ? topicKeyToPattern(routingKey) : ''
    return bindingMember({ routingKey, pattern, queue })
  }

  async bind(queue: string, exchange: string, routingKey: string): Promise<void> {
    if (this.typeOf(exchange) === 'fanout') {
      const list = this.fanoutBindings.get(queue) ?? []
      if (!list.some((b) => b.exchange === exchange && b.routingKey === routingKey)) list.push({ exchange, routingKey })
      this.fanoutBindings.set(queue, list)
    }
    const bindings = this.queueBindings.get(queue) ?? new Set<string>()
    bindings.add(`${exchange}\n${routingKey}`)
    this.queueBindings.set(queue, bindings)
    await this.conn.sadd(bindingKey(exchange), this.member(queue, exchange, routingKey))
  }

  async unbind(queue: string, exchange: string, routingKey: string): Promise<void> {
    const list = this.fanoutBindings.get(queue)
    if (list) {
      const rest = list.filter((b) => !(b.exchange === exchange && b.routingKey === routingKey))
      if (rest.length) this.fanoutBindings.set(queue, rest)
      else this.fanoutBindings.delete(queue)
    }
    this.queueBindings.get(queue)?.delete(`${exchange}\n${routingKey}`)
    // kombu 5.2.4 only forgets the binding locally; removing the member is what AMQP would do.
    await this.conn.srem(bindingKey(exchange), this.member(queue, exchange, routingKey))
  }

  /** SREM every binding this process made for `queue`; returns nothing to await beyond the commands. */
  forgetQueue(queue: string): Array<[key: string, member: string]> {
    const out: Array<[string, string]> = []
    for (const entry of this.queueBindings.get(queue) ?? []) {
      const [exchange = '', routingKey = ''] = entry.split('\n')
      out.push([bindingKey(exchange), this.member(queue, exchange, routingKey)])
    }
    this.queueBindings.delete(queue)
    this.fanoutBindings.delete(queue)
    return out
  }

  /** kombu `_lookup`: the queues a (exchange, routing key) pair reaches through the binding sets. */
  async lookup(exchange: string, routingKey: string): Promise<string[]> {
    if (!exchange) return [routingKey]
    const type = this.typeOf(exchange)
    const members = (await this.conn.smembers(bindingKey(exchange))).map(parseBindingMember)
    const queues = new Set<string>()
    for (const m of members) {
      if (type === 'fanout') queues.add(m.queue)
      else if (type === 'topic' ? topicMatches(m.pattern, routingKey) : m.routingKey === routingKey) queues.add(m.queue)
    }
    queues.delete('')
    return [...queues]
  }
}
