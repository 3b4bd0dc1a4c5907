// Broker availability for integration tests: in CI a missing broker fails the
// test loudly; elsewhere the test is skipped with a line saying why.
import { connect as netConnect } from 'node:net'
import type { TestContext } from 'node:test'

export const AMQP_URL = process.env.TSQ_TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672//'
export const REDIS_URL = process.env.TSQ_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0'

function portOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = netConnect({ port, host })
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    // Generous: a loaded machine (the suite runs in parallel lanes) can take seconds to accept.
    socket.setTimeout(5000, () => done(false))
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}

export type BrokerKind = 'amqp' | 'redis' | 'file'

export async function brokerAvailable(kind: BrokerKind): Promise<boolean> {
  if (kind === 'file') return true
  // The port of the broker the tests will use, which a helper or a lane may have moved off the default.
  const url = new URL(kind === 'amqp' ? AMQP_URL : REDIS_URL)
  return portOpen(Number(url.port) || (kind === 'amqp' ? 5672 : 6379))
}

/**
 * Returns a skip reason when the broker is down outside CI, throws in CI.
 * Use as `const skip = await brokerSkipReason('amqp'); describe('x', { skip }, ...)`.
 */
export async function brokerSkipReason(kind: BrokerKind): Promise<string | false> {
  if (await brokerAvailable(kind)) return false
  const reason = `${kind} broker not reachable on 127.0.0.1 (start it: see the env notes); skipping ${kind} tests`
  if (process.env.CI) throw new Error(`CI requires the ${kind} broker: ${reason}`)
  process.stderr.write(`SKIP: ${reason}\n`)
  return reason
}

export async function requireBroker(t: TestContext, kind: BrokerKind): Promise<boolean> {
  const reason = await brokerSkipReason(kind)
  if (reason) {
    t.skip(reason)
    return false
  }
  return true
}

let counter = 0
/** Unique entity names so that no test sees another's queues. */
export function uniqueName(prefix = 'tsq-test'): string {
  counter += 1
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${counter}`
}

/**
 * Deletes the kombu binding sets (`_kombu.binding.<exchange>`) that this test
 * process made for exchanges named by uniqueName(prefix...). A Redis queue
 * delete removes only the bindings its own transport knows (as kombu's does),
 * so a binding made by another transport, or a worker, would outlive the run.
 */
export async function deleteRedisBindingsOfThisProcess(url: string, prefix: string): Promise<void> {
  const { Redis } = await import('ioredis')
  const { EXCHANGE_TYPES_KEY } = await import('../../src/transport/redis/routing.js')
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 })
  try {
    await redis.connect()
    const keys: string[] = []
    let cursor = '0'
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', `_kombu.binding.${prefix}*-${process.pid}-*`, 'COUNT', 1000)
      cursor = next
      keys.push(...found)
    } while (cursor !== '0')
    if (keys.length) await redis.del(...keys)
    // The types tsq records for this process's fanout and topic exchanges, fields of one shared hash (EXCHANGE_TYPES_KEY).
    const fields: string[] = []
    cursor = '0'
    do {
      const [next, found] = await redis.hscan(EXCHANGE_TYPES_KEY, cursor, 'MATCH', `${prefix}*-${process.pid}-*`, 'COUNT', 1000)
      cursor = next
      for (let i = 0; i < found.length; i += 2) fields.push(found[i]!)
    } while (cursor !== '0')
    if (fields.length) await redis.hdel(EXCHANGE_TYPES_KEY, ...fields)
  } finally {
    redis.disconnect()
  }
}

export async function waitFor<T>(
  probe: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 50, what = 'condition' }: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value) return value as NonNullable<T>
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, intervalMs))
  }
}
