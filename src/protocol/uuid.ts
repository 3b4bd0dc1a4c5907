// Version 4 UUIDs for the ids tsq makes per message (task ids, the Redis
// envelope's delivery tag, the mailbox's reply queues and tickets): random
// bytes from node:crypto, as crypto.randomUUID's, drawn from a pool refilled
// 256 ids at a time, and written as text in one piece. crypto.randomUUID joins
// its 36 characters from 20 pieces: about 600 bytes of garbage per id, two ids
// per send, an eighth of what a send allocates (bench/README.md, producer).
import { randomFillSync } from 'node:crypto'

const IDS_PER_FILL = 256
const pool = Buffer.allocUnsafe(16 * IDS_PER_FILL)
let poolAt = pool.length
const text = Buffer.allocUnsafe(36)
/** Two ASCII hex digits per byte value, high nibble first. */
const HEX: Array<[number, number]> = Array.from({ length: 256 }, (_, byte) => {
  const digits = byte.toString(16).padStart(2, '0')
  return [digits.charCodeAt(0), digits.charCodeAt(1)]
})

/** A random UUID, `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`, as crypto.randomUUID writes it. */
export function uuid4(): string {
  if (poolAt === pool.length) {
    randomFillSync(pool)
    poolAt = 0
  }
  const at = poolAt
  poolAt += 16
  pool[at + 6] = (pool[at + 6]! & 0x0f) | 0x40
  pool[at + 8] = (pool[at + 8]! & 0x3f) | 0x80
  let o = 0
  for (let k = 0; k < 16; k++) {
    if (k === 4 || k === 6 || k === 8 || k === 10) text[o++] = 45 // -
    const [high, low] = HEX[pool[at + k]!]!
    text[o++] = high
    text[o++] = low
  }
  return text.toString('latin1', 0, 36)
}
