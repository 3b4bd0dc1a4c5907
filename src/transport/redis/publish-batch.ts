// Coalesces the LPUSHes of concurrent sends: what is sent while a write is
// outstanding waits for the end of the turn, then every message bound for one
// list goes out as ONE multi-value `LPUSH key m1 m2 ...` (lists of several keys
// share a pipeline). A thousand sends in flight cost Redis, ioredis and the
// socket a command or two instead of a thousand. Each send still resolves only
// on Redis's reply to the LPUSH that carried it, so a send that resolved is in
// the list, whatever happens next.
//
// `LPUSH k a b c` pushes a, then b, then c, as three LPUSHes in that order
// would, so a consumer BRPOPing the tail still takes them in the order sent;
// and it is atomic: all of the messages are in the list, or none.
import type { Redis } from 'ioredis'

interface Pending {
  key: string
  payload: string | Buffer
  resolve: () => void
  reject: (error: unknown) => void
}

/** Most messages one write carries; a bigger batch is cut into several. */
const MAX_BATCH = 1000

export class PublishBatcher {
  private pending: Pending[] = []
  private scheduled = false
  private outstanding = 0
  private drained: Array<() => void> = []

  /** `classify` turns a driver error into what the send rejects with. */
  constructor(
    private readonly conn: () => Redis,
    private readonly classify: (error: unknown, key: string) => unknown = (error) => error,
  ) {}

  push(key: string, payload: string | Buffer): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      // Nothing outstanding: a lone send goes out at once, so a send awaited
      // one at a time pays no wait for the turn to end. Sends made while a
      // write is outstanding collect behind it, as Nagle's algorithm does.
      if (this.outstanding === 0 && !this.scheduled) {
        this.sendOne({ key, payload, resolve, reject })
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
    if (this.outstanding === 0) return
    await new Promise<void>((resolve) => this.drained.push(resolve))
  }

  private flush(): void {
    this.scheduled = false
    if (this.pending.length === 0) return
    const batch = this.pending
    this.pending = []
    for (let i = 0; i < batch.length; i += MAX_BATCH) this.sendMany(i === 0 && batch.length <= MAX_BATCH ? batch : batch.slice(i, i + MAX_BATCH))
  }

  private sendOne(p: Pending): void {
    this.outstanding += 1
    this.conn()
      .lpush(p.key, p.payload)
      .then(
        () => p.resolve(),
        (error: unknown) => p.reject(this.classify(error, p.key)),
      )
      .finally(() => this.settled())
  }

  private sendMany(batch: Pending[]): void {
    if (batch.length === 1) return this.sendOne(batch[0]!)
    const byKey = new Map<string, Pending[]>()
    for (const p of batch) {
      const group = byKey.get(p.key)
      if (group) group.push(p)
      else byKey.set(p.key, [p])
    }
    this.outstanding += 1
    let written: Promise<unknown>
    const groups = [...byKey.values()]
    if (groups.length === 1) {
      const group = groups[0]!
      written = this.conn()
        .lpush(group[0]!.key, ...group.map((p) => p.payload))
        .then(
          () => settleAll(group, undefined),
          (error: unknown) => settleAll(group, this.classify(error, group[0]!.key)),
        )
    } else {
      const pipeline = this.conn().pipeline()
      for (const group of groups) pipeline.lpush(group[0]!.key, ...group.map((p) => p.payload))
      written = pipeline.exec().then(
        (results) => {
          groups.forEach((group, i) => {
            const error = results ? results[i]?.[0] : new Error('pipeline aborted')
            settleAll(group, error ? this.classify(error, group[0]!.key) : undefined)
          })
        },
        (error: unknown) => {
          for (const group of groups) settleAll(group, this.classify(error, group[0]!.key))
        },
      )
    }
    void written.finally(() => this.settled())
  }

  private settled(): void {
    this.outstanding -= 1
    if (this.outstanding > 0 || this.pending.length > 0) return
    const waiting = this.drained
    this.drained = []
    for (const resolve of waiting) resolve()
  }
}

function settleAll(group: Pending[], error: unknown): void {
  if (error === undefined) for (const p of group) p.resolve()
  else for (const p of group) p.reject(error)
}
