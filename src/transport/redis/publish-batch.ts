// Coalesces the LPUSHes of concurrent sends: what is sent while a write is
// outstanding waits for the end of the turn, then every message bound for one
// list goes out as ONE multi-value `LPUSH key m1 m2 ...` (the commands of
// several lists are written back to back, as a pipeline). A thousand sends in
// flight cost Redis, ioredis and the socket a command or two instead of a
// thousand. Each send still resolves only
// on Redis's reply to the LPUSH that carried it, so a send that resolved is in
// the list, whatever happens next.
//
// `LPUSH k a b c` pushes a, then b, then c, as three LPUSHes in that order
// would, so a consumer BRPOPing the tail still takes them in the order sent;
// and it is atomic: all of the messages are in the list, or none.
//
// A batch goes out as RESP bytes written as each send is made
// (tricks/lpush-wire.ts), or, with that trick off, through ioredis's lpush.
import type { Redis } from 'ioredis'
import { WireListBatch } from './tricks/lpush-wire.js'

export interface Settle {
  resolve: () => void
  reject: (error: unknown) => void
}

interface Pending extends Settle {
  key: string
  /** A kombu envelope's text: ASCII (kombu's JSON escapes the rest, the body is base64). */
  payload: string
}

/** The sends of one turn bound for one list, and how they go out as one LPUSH. */
export interface ListBatch {
  readonly key: string
  readonly sends: Settle[]
  add(payload: string, settle: Settle): void
  /** Sends the batch on `conn`; settles on Redis's reply. */
  send(conn: Redis): Promise<unknown>
}

/** A batch sent through ioredis's own lpush (TSQ_NO_LPUSH_WIRE). */
export class PlainListBatch implements ListBatch {
  readonly sends: Settle[] = []
  private readonly payloads: string[] = []

  constructor(readonly key: string) {}

  add(payload: string, settle: Settle): void {
    this.payloads.push(payload)
    this.sends.push(settle)
  }

  send(conn: Redis): Promise<unknown> {
    return conn.lpush(this.key, ...this.payloads)
  }
}

/** Most messages one write carries; a bigger batch is cut into several. */
const MAX_BATCH = 1000

export class PublishBatcher {
  /** This turn's batches, one per list, in the order their lists were first sent to. */
  private lists = new Map<string, ListBatch>()
  /** Batches that reached MAX_BATCH this turn, in order: they go first. */
  private full: ListBatch[] = []
  private scheduled = false
  private outstanding = 0
  private drained: Array<() => void> = []

  /** `classify` turns a driver error into what the send rejects with; `wire`: batches as tricks/lpush-wire.ts writes them. */
  constructor(
    private readonly conn: () => Redis,
    private readonly classify: (error: unknown, key: string) => unknown = (error) => error,
    private readonly wire = true,
  ) {}

  push(key: string, payload: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      // Nothing outstanding: a lone send goes out at once, so a send awaited
      // one at a time pays no wait for the turn to end. Sends made while a
      // write is outstanding collect behind it, as Nagle's algorithm does.
      if (this.outstanding === 0 && !this.scheduled) {
        this.sendOne({ key, payload, resolve, reject })
        return
      }
      let batch = this.lists.get(key)
      if (!batch) this.lists.set(key, (batch = this.wire ? new WireListBatch(key) : new PlainListBatch(key)))
      batch.add(payload, { resolve, reject })
      if (batch.sends.length >= MAX_BATCH) {
        this.full.push(batch)
        this.lists.delete(key)
      }
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
    if (this.hasWaiting()) this.flush()
    if (this.outstanding === 0) return
    await new Promise<void>((resolve) => this.drained.push(resolve))
  }

  private hasWaiting(): boolean {
    return this.lists.size > 0 || this.full.length > 0
  }

  private flush(): void {
    this.scheduled = false
    const batches = [...this.full, ...this.lists.values()]
    this.full = []
    this.lists = new Map()
    // One command per batch, written back to back on the one connection, so
    // they share the round trip as a pipeline would; a list's full batches
    // went into `full` before its last, so each list keeps its order.
    for (const batch of batches) this.sendBatch(batch)
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

  private sendBatch(batch: ListBatch): void {
    this.outstanding += 1
    void batch
      .send(this.conn())
      .then(
        () => settleAll(batch.sends, undefined),
        (error: unknown) => settleAll(batch.sends, this.classify(error, batch.key)),
      )
      .finally(() => this.settled())
  }

  private settled(): void {
    this.outstanding -= 1
    if (this.outstanding > 0 || this.hasWaiting()) return
    const waiting = this.drained
    this.drained = []
    for (const resolve of waiting) resolve()
  }
}

function settleAll(sends: Settle[], error: unknown): void {
  if (error === undefined) for (const p of sends) p.resolve()
  else for (const p of sends) p.reject(error)
}
