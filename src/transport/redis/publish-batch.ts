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
// A batch goes to the socket as bytes this file writes (ListBatch, LpushWire),
// not through ioredis's lpush(key, ...values): that took each message as a
// Buffer of its own (a Buffer.from per send) and copied them all again into
// the command's buffer. Writing each message once, as it is sent, into its
// list's RESP cut a send's CPU by about a tenth (bench/README.md, producer).
import { Command, type Redis } from 'ioredis'

export interface Settle {
  resolve: () => void
  reject: (error: unknown) => void
}

interface Pending extends Settle {
  key: string
  /** A kombu envelope's text: ASCII (kombu's JSON escapes the rest, the body is base64). */
  payload: string
}

/** The first chunk of a list's batch; each next one doubles, up to LARGEST_CHUNK. */
const FIRST_CHUNK = 16 * 1024
const LARGEST_CHUNK = 1024 * 1024

/**
 * The messages of one turn bound for one list, written into RESP as each send
 * arrives, while its text is new: a message's text is a rope of the pieces
 * encodeEnvelope joined, and one kept until the turn ends outlives a young
 * collection (copied, then flattened from the old space: measured slower
 * than ioredis's own path).
 */
export class ListBatch {
  readonly sends: Settle[] = []
  private readonly chunks: Buffer[] = []
  private chunk: Buffer = Buffer.allocUnsafe(FIRST_CHUNK)
  private at = 0

  constructor(readonly key: string) {}

  add(payload: string, settle: Settle): void {
    const length = payload.length
    const lengthText = String(length)
    const need = length + lengthText.length + 5
    if (this.chunk.length - this.at < need) {
      this.chunks.push(this.chunk.subarray(0, this.at))
      this.chunk = Buffer.allocUnsafe(Math.max(need, Math.min(LARGEST_CHUNK, this.chunk.length * 2)))
      this.at = 0
    }
    const chunk = this.chunk
    let at = this.at
    chunk[at++] = 36 // $
    at += chunk.write(lengthText, at, 'latin1')
    chunk[at++] = 13
    chunk[at++] = 10
    at += chunk.write(payload, at, 'latin1')
    chunk[at++] = 13
    chunk[at++] = 10
    this.at = at
    this.sends.push(settle)
  }

  /** `LPUSH key m1 … mN` in RESP, as one buffer. */
  command(): LpushWire {
    const head = Buffer.from(`*${this.sends.length + 2}\r\n$5\r\nLPUSH\r\n$${Buffer.byteLength(this.key)}\r\n${this.key}\r\n`, 'utf8')
    return new LpushWire(Buffer.concat([head, ...this.chunks, this.chunk.subarray(0, this.at)]))
  }
}

/**
 * A prebuilt `LPUSH` for ioredis: written to the socket as these bytes, its
 * reply handled as any LPUSH's. ioredis's own Script overrides toWritable so.
 */
export class LpushWire extends Command {
  constructor(private readonly wire: Buffer) {
    super('lpush', [])
  }

  override toWritable(): Buffer {
    return this.wire
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

  /** `classify` turns a driver error into what the send rejects with. */
  constructor(
    private readonly conn: () => Redis,
    private readonly classify: (error: unknown, key: string) => unknown = (error) => error,
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
      if (!batch) this.lists.set(key, (batch = new ListBatch(key)))
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
    const command = batch.command()
    this.outstanding += 1
    this.conn().sendCommand(command)
    void command.promise
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
