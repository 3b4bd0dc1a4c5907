// Coalesces the LPUSHes of concurrent sends into one pipeline per turn of the
// event loop: a thousand sends in flight become a few writes to the socket
// instead of a thousand, while each send still resolves only on Redis's reply
// to its own LPUSH (so a send that resolved is in the list, whatever happens next).
import type { Redis } from 'ioredis'

interface Pending {
  key: string
  payload: string
  resolve: () => void
  reject: (error: unknown) => void
}

/** Most commands one pipeline carries; a bigger batch waits for the next one. */
const MAX_BATCH = 1000

export class PublishBatcher {
  private pending: Pending[] = []
  private scheduled = false
  private readonly inFlight = new Set<Promise<unknown>>()

  constructor(private readonly conn: () => Redis) {}

  push(key: string, payload: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      // Nothing outstanding: a lone send goes out at once, so a send awaited
      // one at a time pays no wait for the turn to end. Sends made while a
      // write is outstanding collect behind it, as Nagle's algorithm does.
      if (this.inFlight.size === 0 && !this.scheduled) {
        this.send([{ key, payload, resolve, reject }])
        return
      }
      this.pending.push({ key, payload, resolve, reject })
      if (!this.scheduled) {
        this.scheduled = true
        // setImmediate, not a microtask: sends started in one synchronous run
        // reach push() over several microtask hops, and all should share a flush.
        setImmediate(() => this.flush())
      }
    })
  }

  /**
   * Sends what waits for the next turn now, and settles once Redis has
   * answered every publish made so far: a close must not QUIT ahead of the
   * sends started just before it.
   */
  async drain(): Promise<void> {
    if (this.pending.length) this.flush()
    await Promise.allSettled([...this.inFlight])
  }

  private flush(): void {
    if (this.pending.length === 0) return
    this.scheduled = false
    const batch = this.pending
    this.pending = []
    for (let i = 0; i < batch.length; i += MAX_BATCH) this.send(batch.slice(i, i + MAX_BATCH))
  }

  private send(batch: Pending[]): void {
    if (batch.length === 1) {
      const only = batch[0]!
      this.track(this.conn().lpush(only.key, only.payload).then(() => only.resolve(), only.reject))
      return
    }
    const pipeline = this.conn().pipeline()
    for (const p of batch) pipeline.lpush(p.key, p.payload)
    this.track(pipeline.exec().then(
      (results) => {
        batch.forEach((p, i) => {
          const error = results?.[i]?.[0]
          if (error) p.reject(error)
          else if (!results) p.reject(new Error('pipeline aborted'))
          else p.resolve()
        })
      },
      (error: unknown) => {
        for (const p of batch) p.reject(error)
      },
    ))
  }

  private track(sent: Promise<unknown>): void {
    this.inFlight.add(sent)
    void sent.finally(() => this.inFlight.delete(sent))
  }
}
