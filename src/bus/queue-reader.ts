// Reading a queue without consuming it for good (RabbitMQ has no other way):
// every ready message is taken unacked, looked at, then acked (removed) or
// given back. A reader that dies gives back everything it had not acked, so
// nothing is lost; messages another consumer holds meanwhile are not seen.
import type { Delivery, Transport } from '../transport/index.js'

/** How long a read waits for what it gave back to be ready again. */
const GIVE_BACK_WAIT_MS = 2000

export interface ReadOptions {
  /** How long to wait for the first message when the queue says it has some (ms). */
  firstWaitMs?: number
  /** How long to wait after the latest message for another (ms). */
  idleMs?: number
}

/**
 * Takes every ready message of `queue` (up to what it held when the read
 * began), oldest first, and hands the lot to `visit`, which settles each one
 * it wants gone (ack); whatever it does not settle goes back to the queue,
 * in its order, when `visit` returns or throws.
 */
export async function readQueue<T>(
  transport: Transport,
  queue: string,
  visit: (deliveries: Delivery[]) => Promise<T>,
  options: ReadOptions = {},
): Promise<T> {
  const status = transport.checkQueue ? await transport.checkQueue(queue) : { messageCount: Number.POSITIVE_INFINITY, consumerCount: null }
  if (!status) return visit([])
  const expected = status.messageCount
  const taken: Delivery[] = []
  const settled = new Set<Delivery>()
  let wake: (() => void) | undefined
  const consumer =
    expected === 0
      ? undefined
      : await transport.consume(
          queue,
          (d) => {
            taken.push(d)
            wake?.()
          },
          { prefetch: 0 },
        )
  try {
    if (consumer) {
      const firstWaitMs = options.firstWaitMs ?? 3000
      const idleMs = options.idleMs ?? 400
      for (;;) {
        if (taken.length >= expected) break
        const before = taken.length
        await new Promise<void>((resolve) => {
          wake = resolve
          setTimeout(resolve, before === 0 ? firstWaitMs : idleMs).unref?.()
        })
        wake = undefined
        if (taken.length === before) break
      }
    }
    const tracked = taken.map((d) => ({
      ...d,
      ack: async () => {
        await d.ack()
        settled.add(d)
      },
      reject: async (o: { requeue: boolean }) => {
        await d.reject(o)
        settled.add(d)
      },
    }))
    return await visit(tracked)
  } finally {
    if (consumer) {
      // Acks go out batched at the end of a turn; a round trip on the consumer's own channel
      // (basic.qos) returns once the broker has them. Then no more deliveries: a message given
      // back while the consumer lived would come straight back to it.
      await new Promise((resolve) => setImmediate(resolve))
      await consumer.setPrefetch(1).catch(() => undefined)
      await consumer.cancel().catch(() => undefined)
    }
    // What arrived meanwhile was never looked at: it goes back too. Newest first, so that where
    // a requeued message goes to the head (Redis) the oldest ends up first again.
    let givenBack = 0
    for (const d of [...taken].reverse()) {
      if (settled.has(d)) continue
      await d.reject({ requeue: true }).catch(() => undefined)
      givenBack += 1
    }
    // RabbitMQ puts requeued messages back a moment after it answers: a read right after this one
    // (a script's next command) must find them.
    if (givenBack > 0 && transport.checkQueue) {
      const deadline = Date.now() + GIVE_BACK_WAIT_MS
      while (Date.now() < deadline && ((await transport.checkQueue(queue).catch(() => null))?.messageCount ?? givenBack) < givenBack)
        await new Promise((r) => setTimeout(r, 20))
    }
  }
}
