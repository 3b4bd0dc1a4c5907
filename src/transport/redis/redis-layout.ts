// kombu's Redis layout read and changed directly, for the admin verbs the
// Transport contract leaves out (virtual/admin.ts): every binding set, an
// exchange's removal, a queue's existence as kombu's `_has_queue` sees it.
import { Redis } from 'ioredis'
// DEBUG=ioredis:* lines with their passwords masked.
import './debug-filter.js'
import type { BindingRow } from '../admin.js'
import { BrokerConnectionError } from '../errors.js'
import type { TransportSettings } from '../registry.js'
import { maskUrl } from '../url.js'
import type { VirtualLayout } from '../virtual/admin.js'
import { classifyRedisError } from './classify-error.js'
import type { RedisKeys } from './keys.js'
import { explainRedisConnectFailure, redisClientOptions, resolveRedisOptions } from './options.js'
import { EXCHANGE_TYPES_KEY } from './routing.js'

export class RedisLayout implements VirtualLayout {
  readonly vhost: string

  private constructor(
    private readonly conn: Redis,
    private readonly displayUrl: string,
    db: number,
    /** The app's global_keyprefix, sep and priority steps, as its workers name keys. */
    private readonly keys: RedisKeys,
  ) {
    this.vhost = String(db)
  }

  private get bindingPrefix(): string {
    return this.keys.binding('')
  }

  private get typesKey(): string {
    return this.keys.key(EXCHANGE_TYPES_KEY)
  }

  static async open(url: string, settings: TransportSettings = {}): Promise<RedisLayout> {
    const resolved = resolveRedisOptions(url, { ssl: settings.ssl, layout: settings.redisLayout })
    const options = redisClientOptions(resolved)
    const conn = new Redis({ ...options, lazyConnect: true, maxRetriesPerRequest: 2, retryStrategy: () => null })
    conn.on('error', () => undefined)
    try {
      await conn.connect()
    } catch (err) {
      conn.disconnect()
      throw new BrokerConnectionError(`cannot connect to ${maskUrl(url)}: ${await explainRedisConnectFailure(err, options)}`, {
        cause: err,
      })
    }
    return new RedisLayout(conn, maskUrl(url), options.db, resolved.keys)
  }

  private async run<T>(where: string, step: () => Promise<T>): Promise<T> {
    try {
      return await step()
    } catch (err) {
      throw classifyRedisError(err, where, this.displayUrl)
    }
  }

  private async bindingKeys(): Promise<string[]> {
    const keys = new Set<string>()
    let cursor = '0'
    do {
      const [next, batch] = await this.conn.scan(
        cursor,
        'MATCH',
        `${this.bindingPrefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}*`,
        'COUNT',
        500,
      )
      for (const key of batch) keys.add(key)
      cursor = next
    } while (cursor !== '0')
    return [...keys].sort()
  }

  bindings(): Promise<BindingRow[]> {
    return this.run('read bindings', async () => {
      const rows: BindingRow[] = []
      for (const key of await this.bindingKeys()) {
        const exchange = key.slice(this.bindingPrefix.length)
        for (const member of await this.conn.smembers(key)) {
          const { queue, routingKey } = this.keys.parseBindingMember(member)
          if (queue) rows.push({ queue, exchange, routingKey })
        }
      }
      return rows
    })
  }

  exchangeExists(exchange: string): Promise<boolean> {
    return this.run(
      `check exchange ${exchange}`,
      async () => (await this.conn.exists(this.keys.binding(exchange))) > 0 || (await this.conn.hexists(this.typesKey, exchange)) === 1,
    )
  }

  deleteExchange(exchange: string): Promise<void> {
    return this.run(`delete exchange ${exchange}`, async () => {
      await this.conn.multi().del(this.keys.binding(exchange)).hdel(this.typesKey, exchange).exec()
    })
  }

  unbindQueue(queue: string): Promise<void> {
    return this.run(`unbind queue ${queue}`, async () => {
      for (const key of await this.bindingKeys()) {
        const members = (await this.conn.smembers(key)).filter((m) => this.keys.parseBindingMember(m).queue === queue)
        if (members.length) await this.conn.srem(key, ...members)
      }
    })
  }

  queueExists(queue: string): Promise<boolean> {
    return this.run(`check queue ${queue}`, async () => (await this.conn.exists(...this.keys.lists(queue))) > 0)
  }

  async close(): Promise<void> {
    await this.conn.quit().catch(() => this.conn.disconnect())
  }
}
