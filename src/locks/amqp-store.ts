// Locks on RabbitMQ: a held lock is an exclusive queue, `tsq.lock.<id>`,
// declared by the holder's connection. The broker refuses a second declarer
// (405 RESOURCE_LOCKED) and deletes the queue the moment the holder's
// connection dies, so a killed worker or pool process frees its locks at once
// (the exclusive-queue mutex of aos-scheduler's beat, applied to tasks). No
// lease runs out on the broker: the "lease" is the connection, kept alive by
// its heartbeat; renewal checks the queue is still this connection's. A lock
// is declared on a connection whose heartbeat is half its lease (RabbitMQ
// drops a silent peer within two heartbeat timeouts), so a holder that stops answering
// without dying (paused, partitioned) loses the lock within about its lease,
// as on Redis, and a fenced write then refuses its token.
//
// The holder consumes its own queue, bound to the fanout exchange `tsq.locks`,
// and answers there: `who` (its record, for `tsq locks ls/show`) and `release`
// (`tsq locks rm`: it deletes the queue, and its next renewal fails).
//
// Fencing tokens need a counter RabbitMQ does not have: INCR of
// `tsq:lock-token:<id>` in a Redis result backend when there is one (the Redis
// store's key), else the token is 0 ("unavailable", docs/locks.md).
//
// `once` marks outlive their sender's connection, so they are messages: one
// in the queue `tsq.once.<id>` ({taskId, expiresAt}, with a per-message TTL),
// read and written only while holding the exclusive queue `tsq.once.<id>.mutex`.
import type { Redis } from 'ioredis'
// DEBUG=ioredis:* lines with their passwords masked.
import '../transport/redis/index.js'
import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage } from 'amqplib'
import { hostname } from 'node:os'
import { amqpConnectSettings, openAmqpConnection } from '../transport/amqp/index.js'
import { redisUrlClientOptions } from '../transport/index.js'
import { recordOf, TOKEN_PREFIX } from './lock.js'
import type { AcquireResult, HolderInfo, LockListing, LockRecord, LockStore, MarkResult } from './lock.js'

export const AMQP_LOCK_QUEUE_PREFIX = 'tsq.lock.'
export const AMQP_LOCKS_EXCHANGE = 'tsq.locks'
export const AMQP_ONCE_QUEUE_PREFIX = 'tsq.once.'
/** How long `tsq locks ls` waits for holders after the last answer. */
const LIST_STALL_MS = 500
/** How long `show`/`rm` wait for one holder. */
const ASK_TIMEOUT_MS = 2000
/** An idle once-mark queue goes away after this (its mark expired long before). */
const ONCE_QUEUE_EXPIRES_MS = 7 * 24 * 3600 * 1000

interface Held {
  channel: Channel
  record: LockRecord
  lost: boolean
  /** The heartbeat (s) of the connection it was declared on: that connection's close loses it. */
  heartbeat: number
}

/**
 * The heartbeat (s) for a lock of this lease: half of it, rounded up. RabbitMQ
 * gives a silent peer up between one and two heartbeat timeouts, so a paused
 * holder loses the lock within about its lease, and a busy one may stall for
 * half its lease (on Redis: two thirds) before it does. Never longer than the
 * URL's own heartbeat.
 */
export function lockHeartbeatS(leaseMs: number, urlHeartbeatS: number): number {
  const half = Math.max(1, Math.ceil(leaseMs / 2000))
  return urlHeartbeatS > 0 ? Math.min(urlHeartbeatS, half) : half
}

type Ask = { op: 'who' } | { op: 'release' }

export class AmqpLockStore implements LockStore {
  readonly kind = 'amqp' as const
  /** By heartbeat (s): the URL's for asks and marks, a lease's for the locks of that lease. */
  private readonly connections = new Map<number, Promise<ChannelModel>>()
  private readonly held = new Map<string, Held>()
  /** Acquisitions in flight in this process: one connection may redeclare its own exclusive queue, so the process guards itself. */
  private readonly acquiring = new Set<string>()
  /** Opened on the first token asked for: ioredis is loaded only by a store that counts tokens. */
  private counter: Promise<Redis> | undefined
  private readonly markTurns = new Map<string, Promise<void>>()

  constructor(
    readonly url: string,
    /** A redis:// URL whose INCR gives fencing tokens; null: tokens are 0. */
    readonly counterUrl: string | null = null,
  ) {}

  private get urlHeartbeatS(): number {
    return amqpConnectSettings(this.url).connect.heartbeat ?? 0
  }

  private connect(heartbeat = this.urlHeartbeatS): Promise<ChannelModel> {
    let connection = this.connections.get(heartbeat)
    if (connection) return connection
    const settings = amqpConnectSettings(this.url)
    connection = openAmqpConnection(
      { ...settings, connect: { ...settings.connect, heartbeat } },
      `tsq-locks ${hostname()}:${process.pid}`,
    ).then(
      (conn) => {
        conn.on('error', () => undefined)
        conn.on('close', () => {
          // The broker freed every queue of this connection: each lock held on it is lost.
          if (this.connections.get(heartbeat) === connection) this.connections.delete(heartbeat)
          for (const h of this.held.values()) if (h.heartbeat === heartbeat) h.lost = true
        })
        return conn
      },
      (error: unknown) => {
        if (this.connections.get(heartbeat) === connection) this.connections.delete(heartbeat)
        throw error
      },
    )
    this.connections.set(heartbeat, connection)
    return connection
  }

  private async channel(confirm = false, heartbeat?: number): Promise<Channel> {
    const conn = await this.connect(heartbeat)
    const ch = confirm ? await conn.createConfirmChannel() : await conn.createChannel()
    // A refused declare closes the channel; the promise carries the reason.
    ch.on('error', () => undefined)
    return ch
  }

  private async nextToken(id: string): Promise<number> {
    if (!this.counterUrl) return 0
    const url = this.counterUrl
    this.counter ??= import('ioredis').then(({ Redis }) => {
      const counter = new Redis({ ...redisUrlClientOptions(url), maxRetriesPerRequest: 1, connectTimeout: 2000, commandTimeout: 5000 })
      counter.on('error', () => undefined)
      return counter
    })
    return (await this.counter).incr(TOKEN_PREFIX + id)
  }

  async acquire(id: string, leaseMs: number, who: HolderInfo): Promise<AcquireResult> {
    if (this.held.has(id) || this.acquiring.has(id)) return { acquired: false, remainingMs: leaseMs }
    this.acquiring.add(id)
    let ch: Channel | undefined
    const heartbeat = lockHeartbeatS(leaseMs, this.urlHeartbeatS)
    try {
      ch = await this.channel(false, heartbeat)
      const queue = AMQP_LOCK_QUEUE_PREFIX + id
      try {
        await ch.assertQueue(queue, { exclusive: true, durable: false, autoDelete: false })
      } catch (error) {
        if (lockedByAnother(error)) return { acquired: false, remainingMs: leaseMs }
        throw error
      }
      const token = await this.nextToken(id)
      const record: LockRecord = { ...recordOf(id, who, leaseMs), token }
      const held: Held = { channel: ch, record, lost: false, heartbeat }
      await ch.assertExchange(AMQP_LOCKS_EXCHANGE, 'fanout', { durable: true, autoDelete: false })
      await ch.bindQueue(queue, AMQP_LOCKS_EXCHANGE, '')
      await ch.consume(queue, (msg) => void this.answer(held, msg), { noAck: true })
      this.held.set(id, held)
      ch = undefined
      return { acquired: true, record }
    } finally {
      this.acquiring.delete(id)
      // A channel left here did not get the lock (or failed half-way): its queue goes with it.
      if (ch) await ch.close().catch(() => undefined)
    }
  }

  private async answer(held: Held, msg: ConsumeMessage | null): Promise<void> {
    if (!msg) {
      held.lost = true
      return
    }
    let ask: Ask
    try {
      ask = JSON.parse(msg.content.toString()) as Ask
    } catch {
      return
    }
    const reply = (body: unknown) => {
      if (msg.properties.replyTo)
        held.channel.sendToQueue(msg.properties.replyTo, Buffer.from(JSON.stringify(body)), { correlationId: msg.properties.correlationId })
    }
    if (ask.op === 'who') reply({ ...held.record, leftMs: held.lost ? 0 : held.record.leaseMs })
    else if (ask.op === 'release') {
      // An operator's `tsq locks rm`: free it now; the holder's next renewal finds it lost.
      held.lost = true
      reply({ released: true })
      await this.drop(held)
    }
  }

  private async drop(held: Held): Promise<void> {
    if (this.held.get(held.record.id) === held) this.held.delete(held.record.id)
    await held.channel.deleteQueue(AMQP_LOCK_QUEUE_PREFIX + held.record.id).catch(() => undefined)
    await held.channel.close().catch(() => undefined)
  }

  private holding(record: LockRecord): Held | null {
    const h = this.held.get(record.id)
    return h && !h.lost && h.record.token === record.token && h.record.holder === record.holder ? h : null
  }

  async renew(record: LockRecord): Promise<boolean> {
    const h = this.holding(record)
    if (!h) return false
    try {
      await h.channel.checkQueue(AMQP_LOCK_QUEUE_PREFIX + record.id)
      return !h.lost
    } catch {
      return false
    }
  }

  async release(record: LockRecord): Promise<boolean> {
    const h = this.held.get(record.id)
    if (!h || h.record.token !== record.token || h.record.holder !== record.holder) return false
    const had = !h.lost
    await this.drop(h)
    return had
  }

  /** Nothing to do: the broker deleted a dead process's exclusive queues when its connection closed. */
  async releaseHolder(_holder: string): Promise<string[]> {
    return []
  }

  /** Asks every holder (through the fanout exchange) or one (its queue), and collects the answers. */
  private async ask(op: Ask, queue: string | null, stallMs: number, limit: number): Promise<unknown[]> {
    const ch = await this.channel()
    try {
      if (queue) {
        try {
          await ch.checkQueue(queue)
        } catch (error) {
          if (!lockedByAnother(error)) return []
          // Exclusive to its holder: it exists. The closed channel is replaced.
          await ch.close().catch(() => undefined)
          return this.askOn(await this.channel(), op, queue, stallMs, limit)
        }
      } else {
        await ch.assertExchange(AMQP_LOCKS_EXCHANGE, 'fanout', { durable: true, autoDelete: false })
      }
      return await this.askOn(ch, op, queue, stallMs, limit)
    } finally {
      await ch.close().catch(() => undefined)
    }
  }

  private async askOn(ch: Channel, op: Ask, queue: string | null, stallMs: number, limit: number): Promise<unknown[]> {
    try {
      const { queue: replyTo } = await ch.assertQueue('', { exclusive: true, autoDelete: true })
      const answers: unknown[] = []
      await new Promise<void>((resolve) => {
        let timer = setTimeout(resolve, stallMs)
        void ch.consume(
          replyTo,
          (msg) => {
            if (!msg) return resolve()
            try {
              answers.push(JSON.parse(msg.content.toString()))
            } catch {
              return
            }
            clearTimeout(timer)
            if (answers.length >= limit) return resolve()
            timer = setTimeout(resolve, stallMs)
          },
          { noAck: true },
        )
        const body = Buffer.from(JSON.stringify(op))
        if (queue) ch.sendToQueue(queue, body, { replyTo })
        else ch.publish(AMQP_LOCKS_EXCHANGE, '', body, { replyTo })
      })
      return answers
    } finally {
      await ch.close().catch(() => undefined)
    }
  }

  async list(): Promise<LockListing[]> {
    const answers = (await this.ask({ op: 'who' }, null, LIST_STALL_MS, Infinity)) as LockListing[]
    return answers.filter((a) => a && typeof a.id === 'string' && a.leftMs > 0).sort((a, b) => a.id.localeCompare(b.id))
  }

  async get(id: string): Promise<LockListing | null> {
    const [answer] = (await this.ask({ op: 'who' }, AMQP_LOCK_QUEUE_PREFIX + id, ASK_TIMEOUT_MS, 1)) as LockListing[]
    return answer && answer.leftMs > 0 ? answer : null
  }

  async remove(id: string): Promise<boolean> {
    const [answer] = (await this.ask({ op: 'release' }, AMQP_LOCK_QUEUE_PREFIX + id, ASK_TIMEOUT_MS, 1)) as Array<{ released?: boolean }>
    return answer?.released === true
  }

  /** Runs `fn` holding the exclusive queue `<mark>.mutex`: one reader or writer of a mark at a time, across processes. */
  private withMarkMutex<T>(id: string, fn: (ch: ConfirmChannel, queue: string) => Promise<T>): Promise<T> {
    return this.withQueueMutex(AMQP_ONCE_QUEUE_PREFIX + id, fn)
  }

  /** As withMarkMutex for the durable queue `queue`, whatever it holds: the dedup document's (dedup/document-store.ts) too. */
  withQueueMutex<T>(queue: string, fn: (ch: ConfirmChannel, queue: string) => Promise<T>): Promise<T> {
    // The connection may redeclare its own exclusive queue: this process's callers take turns first.
    const before = this.markTurns.get(queue) ?? Promise.resolve()
    const turn = before.then(() => this.withBrokerMutex(queue, fn))
    const settled = turn.then(
      () => undefined,
      () => undefined,
    )
    this.markTurns.set(queue, settled)
    void settled.then(() => {
      if (this.markTurns.get(queue) === settled) this.markTurns.delete(queue)
    })
    return turn
  }

  private async withBrokerMutex<T>(queue: string, fn: (ch: ConfirmChannel, queue: string) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const ch = (await this.channel(true)) as ConfirmChannel
      try {
        await ch.assertQueue(`${queue}.mutex`, { exclusive: true, durable: false, autoDelete: false })
      } catch (error) {
        await ch.close().catch(() => undefined)
        if (!lockedByAnother(error)) throw error
        await new Promise((r) => setTimeout(r, Math.min(1 + attempt, 20)))
        continue
      }
      try {
        await ch.assertQueue(queue, { durable: true, autoDelete: false, arguments: { 'x-expires': ONCE_QUEUE_EXPIRES_MS } })
        return await fn(ch, queue)
      } finally {
        await ch.deleteQueue(`${queue}.mutex`).catch(() => undefined)
        await ch.close().catch(() => undefined)
      }
    }
  }

  mark(id: string, taskId: string, ttlMs: number): Promise<MarkResult> {
    return this.withMarkMutex(id, async (ch, queue) => {
      const now = Date.now()
      for (;;) {
        const msg = await ch.get(queue, { noAck: false })
        if (!msg) break
        const current = parseMark(msg.content)
        if (current && current.expiresAt > now) {
          ch.nack(msg, false, true)
          return { set: false, taskId: current.taskId, remainingMs: current.expiresAt - now }
        }
        ch.ack(msg)
      }
      ch.sendToQueue(queue, Buffer.from(JSON.stringify({ taskId, expiresAt: now + ttlMs })), {
        persistent: true,
        expiration: String(ttlMs),
      })
      // Confirmed before the mutex goes, so the next holder of the mutex reads it.
      await ch.waitForConfirms()
      return { set: true }
    })
  }

  unmark(id: string, taskId: string): Promise<boolean> {
    return this.withMarkMutex(id, async (ch, queue) => {
      const msg = await ch.get(queue, { noAck: false })
      if (!msg) return false
      if (parseMark(msg.content)?.taskId !== taskId) {
        ch.nack(msg, false, true)
        return false
      }
      ch.ack(msg)
      return true
    })
  }

  async close(): Promise<void> {
    const connections = [...this.connections.values()]
    this.connections.clear()
    this.held.clear()
    const counter = this.counter
    this.counter = undefined
    if (counter) (await counter.catch(() => null))?.disconnect()
    await Promise.all(connections.map(async (connection) => (await connection.catch(() => null))?.close().catch(() => undefined)))
  }
}

function parseMark(content: Buffer): { taskId: string; expiresAt: number } | null {
  try {
    return JSON.parse(content.toString()) as { taskId: string; expiresAt: number }
  } catch {
    return null
  }
}

/** RESOURCE_LOCKED: the exclusive queue is another connection's. */
function lockedByAnother(error: unknown): boolean {
  return (error as { code?: number }).code === 405 || /RESOURCE_LOCKED/.test(String((error as Error)?.message))
}
