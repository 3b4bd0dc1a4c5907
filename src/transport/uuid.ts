// Version 4 UUIDs from Math.random, for the names and tags the transports
// make (reply queues, tickets, delivery tags, consumer tags, lock tokens).
// They must be unique, not secret: anyone who can read the broker sees them,
// and V8 seeds Math.random per process from the OS. node:crypto is not used
// because loading it was ~3 ms of every one-shot `tsq inspect` (~4 ms on
// RabbitMQ before it, where nothing else needs it); this costs about what
// crypto.randomUUID does per call.

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'))

const random32 = (): number => (Math.random() * 0x1_0000_0000) >>> 0
const hex8 = (n: number): string => HEX[n >>> 24]! + HEX[(n >>> 16) & 0xff]! + HEX[(n >>> 8) & 0xff]! + HEX[n & 0xff]!

/** A random UUID, `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx` as crypto.randomUUID writes it. */
export function uuid4(): string {
  const timeMid = hex8(((random32() & 0xffff0fff) | 0x0000_4000) >>> 0)
  const clockSeq = hex8(((random32() & 0x3fffffff) | 0x8000_0000) >>> 0)
  return `${hex8(random32())}-${timeMid.slice(0, 4)}-${timeMid.slice(4)}-${clockSeq.slice(0, 4)}-${clockSeq.slice(4)}${hex8(random32())}`
}
