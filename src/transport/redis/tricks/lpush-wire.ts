// A batch of sends to one Redis list written straight into its LPUSH's RESP
// as each send is made, and handed to ioredis as one prebuilt command:
// ioredis's lpush(key, ...values) takes each message as a Buffer of its own
// and copies them all again into the command (bench/README.md#tricks). An
// ioredis Command whose toWritable returns these bytes is written as they are
// and its reply handled as any LPUSH's, as ioredis's own Script does it.
// Switch: TSQ_NO_LPUSH_WIRE (publish-batch.ts then sends ioredis's lpush).
import { Command, type Redis } from 'ioredis'
import type { ListBatch, Settle } from '../publish-batch.js'

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
export class WireListBatch implements ListBatch {
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

  /** Sends the batch on `conn`; settles on Redis's reply. */
  send(conn: Redis): Promise<unknown> {
    const command = this.command()
    conn.sendCommand(command)
    return command.promise
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
