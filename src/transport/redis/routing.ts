// kombu's virtual exchange table on Redis (spec §4.4), the store under the
// virtual layer's exchanges (virtual/exchanges.ts): exchange types live only in
// this process; bindings live in `_kombu.binding.<exchange>` sets shared by
// all, each member kombu's `routing_key<sep>pattern<sep>queue`, the pattern
// kombu's topic regex.
import type { Redis } from 'ioredis'
import type { ExchangeType } from '../transport.js'
import { bindingRow, type BindingRow, type ExchangeStore } from '../virtual/exchanges.js'
import { KOMBU_TOPIC } from '../virtual/topic.js'
import type { RedisKeys } from './keys.js'

/** Celery declares these as fanout on Redis; a process that never declared them still routes right. */
const WELL_KNOWN_FANOUT = new Set(['celery.pidbox', 'celeryev'])

export interface FanoutBinding {
  exchange: string
  routingKey: string
}

/**
 * Not part of kombu's layout: tsq records non-direct exchange types here so that
 * another tsq process publishing to an exchange it never declared still routes it
 * right. Python ignores the key; kombu itself would route such a publish as direct.
 */
export const EXCHANGE_TYPES_KEY = '_tsq.exchange.types'
const NEGATIVE_CACHE_MS = 1000

/** The exchange table; publishing (put, and fanout as pub/sub) is the transport's. */
export class RedisExchangeTable implements Pick<ExchangeStore, 'typeOf' | 'table' | 'storeBinding'> {
  private readonly types = new Map<string, ExchangeType>()
  private readonly remembered = new Map<string, { type: ExchangeType; until: number }>()
  /** Queues bound to a fanout exchange in this process: consumed with PSUBSCRIBE, not BRPOP. */
  readonly fanoutBindings = new Map<string, FanoutBinding[]>()
  /** Bindings made here, so deleteQueue can SREM them (kombu's `state.queue_bindings`). */
  private readonly queueBindings = new Map<string, Set<string>>()

  private readonly typesKey: string

  constructor(
    private readonly conn: Redis,
    private readonly keys: RedisKeys,
  ) {
    this.typesKey = keys.key(EXCHANGE_TYPES_KEY)
  }

  async declare(exchange: string, type: ExchangeType): Promise<void> {
    const known = this.types.get(exchange)
    this.types.set(exchange, type)
    if (known !== type && type !== 'direct' && !WELL_KNOWN_FANOUT.has(exchange)) {
      await this.conn.hset(this.typesKey, exchange, type)
    }
  }

  /** kombu `typeof(exchange, default='direct')`, from what this process knows. */
  private knownType(exchange: string): ExchangeType {
    return this.types.get(exchange) ?? (WELL_KNOWN_FANOUT.has(exchange) ? 'fanout' : 'direct')
  }

  /** knownType, falling back to the type another tsq process recorded; an exchange nobody recorded is direct, as kombu routes it. */
  async typeOf(exchange: string): Promise<ExchangeType> {
    const local = this.types.get(exchange)
    if (local) return local
    if (WELL_KNOWN_FANOUT.has(exchange) || !exchange) return this.knownType(exchange)
    const cached = this.remembered.get(exchange)
    if (cached && cached.until > Date.now()) return cached.type
    const stored = await this.conn.hget(this.typesKey, exchange)
    const type: ExchangeType = stored === 'fanout' || stored === 'topic' ? stored : 'direct'
    this.remembered.set(exchange, { type, until: type === 'direct' ? Date.now() + NEGATIVE_CACHE_MS : Infinity })
    return type
  }

  private member(queue: string, exchange: string, routingKey: string): string {
    return this.keys.bindingMember(bindingRow(this.knownType(exchange), queue, routingKey, KOMBU_TOPIC))
  }

  async storeBinding(exchange: string, type: ExchangeType, row: BindingRow): Promise<void> {
    const { queue, routingKey } = row
    if (!this.types.has(exchange) && type !== 'direct') this.types.set(exchange, type)
    if (type === 'fanout') {
      const list = this.fanoutBindings.get(queue) ?? []
      if (!list.some((b) => b.exchange === exchange && b.routingKey === routingKey)) list.push({ exchange, routingKey })
      this.fanoutBindings.set(queue, list)
    }
    const bindings = this.queueBindings.get(queue) ?? new Set<string>()
    bindings.add(`${exchange}\n${routingKey}`)
    this.queueBindings.set(queue, bindings)
    await this.conn.sadd(this.keys.binding(exchange), this.keys.bindingMember(row))
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
    await this.conn.srem(this.keys.binding(exchange), this.member(queue, exchange, routingKey))
  }

  /** SREM every binding this process made for `queue`; returns nothing to await beyond the commands. */
  forgetQueue(queue: string): Array<[key: string, member: string]> {
    const out: Array<[string, string]> = []
    for (const entry of this.queueBindings.get(queue) ?? []) {
      const [exchange = '', routingKey = ''] = entry.split('\n')
      out.push([this.keys.binding(exchange), this.member(queue, exchange, routingKey)])
    }
    this.queueBindings.delete(queue)
    this.fanoutBindings.delete(queue)
    return out
  }

  /** kombu `get_table`: the members of the exchange's binding set. */
  async table(exchange: string): Promise<BindingRow[]> {
    return (await this.conn.smembers(this.keys.binding(exchange))).map((m) => this.keys.parseBindingMember(m))
  }
}
