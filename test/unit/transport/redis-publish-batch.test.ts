// Issue 27: the Redis send path writes the messages of concurrent sends as one
// multi-value LPUSH per list. Counted here on a recording stand-in for ioredis
// (what goes to the socket); that the messages land in order and survive a
// kill is checked on a real Redis (test/integration/transport/publish-coalescing,
// test/e2e/send-kill9).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Redis } from 'ioredis'
import { PublishBatcher } from '../../../src/transport/redis/publish-batch.js'

interface Call {
  key: string
  values: Array<string | Buffer>
  inPipeline: boolean
}

/** lpush and pipeline().lpush().exec(), recorded; `fail` makes a key's LPUSH fail as Redis would. */
function recorder(fail?: (key: string) => Error | undefined) {
  const calls: Call[] = []
  const settle = (pending: Array<() => void>) => setImmediate(() => pending.splice(0).forEach((f) => f()))
  const waiting: Array<() => void> = []
  const conn = {
    lpush(key: string, ...values: Array<string | Buffer>): Promise<number> {
      calls.push({ key, values, inPipeline: false })
      const error = fail?.(key)
      return new Promise((resolve, reject) => {
        waiting.push(() => (error ? reject(error) : resolve(values.length)))
        settle(waiting)
      })
    },
    pipeline() {
      const queued: Array<{ key: string; values: Array<string | Buffer> }> = []
      const pipeline = {
        lpush(key: string, ...values: Array<string | Buffer>) {
          queued.push({ key, values })
          return pipeline
        },
        exec(): Promise<Array<[Error | null, unknown]>> {
          for (const q of queued) calls.push({ ...q, inPipeline: true })
          return new Promise((resolve) => {
            waiting.push(() => resolve(queued.map((q) => [fail?.(q.key) ?? null, q.values.length])))
            settle(waiting)
          })
        },
      }
      return pipeline
    },
  }
  return { calls, conn: conn as unknown as Redis }
}

describe('[redis PublishBatcher] concurrent sends share one LPUSH per list', () => {
  it('a lone send goes out at once, alone', async () => {
    const { calls, conn } = recorder()
    const batcher = new PublishBatcher(() => conn)
    await batcher.push('q', 'm0')
    assert.deepEqual(calls, [{ key: 'q', values: ['m0'], inPipeline: false }])
  })

  it('1,000 sends made in one turn cost two commands, and keep their order', async () => {
    const { calls, conn } = recorder()
    const batcher = new PublishBatcher(() => conn)
    const sends = Array.from({ length: 1000 }, (_, i) => batcher.push('q', `m${i}`))
    await Promise.all(sends)
    assert.equal(calls.length, 2)
    assert.deepEqual(calls[0]!.values, ['m0'])
    // LPUSH q m1 m2 ... pushes m1 first, as separate LPUSHes in that order would.
    assert.deepEqual(calls[1]!.values, Array.from({ length: 999 }, (_, i) => `m${i + 1}`))
    assert.equal(calls[1]!.inPipeline, false)
  })

  it('more than 1,000 waiting are cut into commands of at most 1,000', async () => {
    const { calls, conn } = recorder()
    const batcher = new PublishBatcher(() => conn)
    await Promise.all(Array.from({ length: 2501 }, (_, i) => batcher.push('q', `m${i}`)))
    assert.deepEqual(calls.map((c) => c.values.length), [1, 1000, 1000, 500])
    assert.deepEqual(calls.flatMap((c) => c.values), Array.from({ length: 2501 }, (_, i) => `m${i}`))
  })

  it('sends to several lists in one turn go as one pipeline, one LPUSH per list', async () => {
    const { calls, conn } = recorder()
    const batcher = new PublishBatcher(() => conn)
    await Promise.all([batcher.push('a', 'a0'), batcher.push('a', 'a1'), batcher.push('b', 'b1'), batcher.push('a', 'a2'), batcher.push('b', 'b2')])
    assert.deepEqual(calls, [
      { key: 'a', values: ['a0'], inPipeline: false },
      { key: 'a', values: ['a1', 'a2'], inPipeline: true },
      { key: 'b', values: ['b1', 'b2'], inPipeline: true },
    ])
  })

  it('a failed LPUSH rejects every send it carried, with the classified error, and only those', async () => {
    const { conn } = recorder((key) => (key === 'bad' ? new Error('WRONGTYPE Operation against a key holding the wrong kind of value') : undefined))
    const batcher = new PublishBatcher(() => conn, (error, key) => new Error(`classified ${key}: ${(error as Error).message}`))
    const first = batcher.push('ok', 'lone')
    const outcomes = await Promise.allSettled([first, batcher.push('bad', 'x1'), batcher.push('ok', 'y1'), batcher.push('bad', 'x2')])
    assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'rejected', 'fulfilled', 'rejected'])
    assert.match(String((outcomes[1] as PromiseRejectedResult).reason), /^Error: classified bad: WRONGTYPE/)
  })

  it('drain() settles only once every send made before it has its reply', async () => {
    const { conn } = recorder()
    const batcher = new PublishBatcher(() => conn)
    const settled: number[] = []
    const sends = Array.from({ length: 10 }, (_, i) => batcher.push('q', `m${i}`).then(() => settled.push(i)))
    await batcher.drain()
    assert.equal(settled.length, 10)
    await Promise.all(sends)
  })
})
