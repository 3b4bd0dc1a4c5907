// Fanout on Redis is pub/sub (spec §4.5): one subscriber connection per transport
// PSUBSCRIBEs `/{db}.<exchange>[/<key>]` for every consuming fanout queue. Nothing
// is stored, so a queue hears only what is published while it listens.
import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { Consumer } from '../../transport.js'

export interface FanoutListener {
  readonly patterns: readonly string[]
  deliver(raw: string, channel: string): void
}

export class FanoutHub {
  private readonly byPattern = new Map<string, Set<FanoutListener>>()
  private readonly onMessage = (pattern: string, channel: string, message: string): void => {
    for (const listener of this.byPattern.get(pattern) ?? []) listener.deliver(message, channel)
  }

  constructor(private readonly sub: Redis) {
    sub.on('pmessage', this.onMessage)
  }

  /** Resolves once Redis has confirmed the subscriptions, so a publish right after is heard. */
  async add(listener: FanoutListener): Promise<void> {
    const fresh: string[] = []
    for (const pattern of listener.patterns) {
      let set = this.byPattern.get(pattern)
      if (!set) {
        set = new Set()
        this.byPattern.set(pattern, set)
        fresh.push(pattern)
      }
      set.add(listener)
    }
    // ioredis replays these after a reconnect (autoResubscribe).
    if (fresh.length) await this.sub.psubscribe(...fresh)
  }

  async remove(listener: FanoutListener): Promise<void> {
    const gone: string[] = []
    for (const pattern of listener.patterns) {
      const set = this.byPattern.get(pattern)
      if (!set) continue
      set.delete(listener)
      if (set.size === 0) {
        this.byPattern.delete(pattern)
        gone.push(pattern)
      }
    }
    if (gone.length) await this.sub.punsubscribe(...gone).catch(() => undefined)
  }

  get size(): number {
    return this.byPattern.size
  }

  close(): void {
    this.sub.off('pmessage', this.onMessage)
    this.byPattern.clear()
  }
}

/** A consumer of a fanout-bound queue: a set of patterns on the hub, nothing in Redis lists. */
export class FanoutConsumer implements Consumer, FanoutListener {
  readonly tag = randomUUID()
  private active = true

  constructor(
    readonly queue: string,
    readonly patterns: readonly string[],
    private readonly hub: FanoutHub,
    private readonly onMessage: (raw: string, queue: string) => void,
    private readonly onCancel: (consumer: FanoutConsumer) => void,
  ) {}

  deliver(raw: string): void {
    if (this.active) this.onMessage(raw, this.queue)
  }

  async cancel(): Promise<void> {
    if (!this.active) return
    this.active = false
    this.onCancel(this)
    await this.hub.remove(this)
  }

  /** Prefetch means nothing here: pub/sub deliveries are never acked. */
  async setPrefetch(): Promise<void> {}
}
