// The Redis send path writes the messages of concurrent sends as one
// multi-value LPUSH per list. Counted here on a recording stand-in for ioredis
// (what goes to the socket); that the messages land in order and survive a
// kill is checked on a real Redis (test/integration/transport/publish-coalescing,
// test/e2e/send-kill9).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Command, type Redis } from 'ioredis'
import { PublishBatcher } from '../../../src/transport/redis/publish-batch.js'
import { LpushWire, WireListBatch } from '../../../src/transport/redis/tricks/lpush-wire.js'

interface Call {
  key: string
  values: string[]
  /** Sent as LpushWire's own bytes (a batch), not through ioredis's lpush (a lone send). */
  wire: boolean
}

/** A RESP array of bulk strings, as Redis reads it: [command, ...arguments]. */
function parseResp(wire: Buffer): string[] {
  const text = wire.toString('latin1')
  const lines = (at: number) => text.indexOf('\r\n', at)
  assert.equal(text[0], '*')
  let at = lines(0)
  const count = Number(text.slice(1, at))
  at += 2
  const out: string[] = []
  for (let i = 0; i < count; i++) {
    assert.equal(text[at], '$')
    const end = lines(at)
    const len = Number(text.slice(at + 1, end))
    // The length counts bytes: a UTF-8 key is checked in its bytes.
    out.push(wire.subarray(end + 2, end + 2 + len).toString('utf8'))
    assert.equal(text.slice(end + 2 + len, end + 4 + len), '\r\n')
    at = end + 4 + len
  }
  assert.equal(at, wire.length, 'nothing after the command')
  return out
}

/** lpush and sendCommand(LpushWire), recorded; `fail` makes a key's LPUSH fail as Redis would. */
function recorder(fail?: (key: string) => Error | undefined) {
  const calls: Call[] = []
  const settle = (pending: Array<() => void>) => setImmediate(() => pending.splice(0).forEach((f) => f()))
  const waiting: Array<() => void> = []
  const conn = {
    lpush(key: string, ...values: string[]): Promise<number> {
      calls.push({ key, values, wire: false })
      const error = fail?.(key)
      return new Promise((resolve, reject) => {
        waiting.push(() => (error ? reject(error) : resolve(values.length)))
        settle(waiting)
      })
    },
    sendCommand(command: LpushWire): unknown {
      assert.ok(command instanceof LpushWire)
      const [name, key, ...values] = parseResp(command.toWritable())
      assert.equal(name, 'LPUSH')
      calls.push({ key: key!, values, wire: true })
      const error = fail?.(key!)
      waiting.push(() => (error ? command.reject(error) : command.resolve(values.length)))
      settle(waiting)
      return command.promise
    },
  }
  return { calls, conn: conn as unknown as Redis }
}

describe('[redis PublishBatcher] concurrent sends share one LPUSH per list', () => {
  it('a lone send goes out at once, alone', async () => {
    const { calls, conn } = recorder()
    const batcher = new PublishBatcher(() => conn)
    await batcher.push('q', 'm0')
    assert.deepEqual(calls, [{ key: 'q', values: ['m0'], wire: false }])
  })

  it('1,000 sends made in one turn cost two commands, and keep their order', async () => {
    const { calls, conn } = recorder()
    const batcher = new PublishBatcher(() => conn)
    const sends = Array.from({ length: 1000 }, (_, i) => batcher.push('q', `m${i}`))
    await Promise.all(sends)
    assert.equal(calls.length, 2)
    assert.deepEqual(calls[0]!.values, ['m0'])
    // LPUSH q m1 m2 ... pushes m1 first, as separate LPUSHes in that order would.
    assert.deepEqual(
      calls[1]!.values,
      Array.from({ length: 999 }, (_, i) => `m${i + 1}`),
    )
    assert.equal(calls[1]!.wire, true)
  })

  it('more than 1,000 waiting are cut into commands of at most 1,000', async () => {
    const { calls, conn } = recorder()
    const batcher = new PublishBatcher(() => conn)
    await Promise.all(Array.from({ length: 2501 }, (_, i) => batcher.push('q', `m${i}`)))
    assert.deepEqual(
      calls.map((c) => c.values.length),
      [1, 1000, 1000, 500],
    )
    assert.deepEqual(
      calls.flatMap((c) => c.values),
      Array.from({ length: 2501 }, (_, i) => `m${i}`),
    )
  })

  it('sends to several lists in one turn go as one LPUSH per list, written back to back', async () => {
    const { calls, conn } = recorder()
    const batcher = new PublishBatcher(() => conn)
    await Promise.all([
      batcher.push('a', 'a0'),
      batcher.push('a', 'a1'),
      batcher.push('b', 'b1'),
      batcher.push('a', 'a2'),
      batcher.push('b', 'b2'),
    ])
    assert.deepEqual(calls, [
      { key: 'a', values: ['a0'], wire: false },
      { key: 'a', values: ['a1', 'a2'], wire: true },
      { key: 'b', values: ['b1', 'b2'], wire: true },
    ])
  })

  it('a failed LPUSH rejects every send it carried, with the classified error, and only those', async () => {
    const { conn } = recorder((key) =>
      key === 'bad' ? new Error('WRONGTYPE Operation against a key holding the wrong kind of value') : undefined,
    )
    const batcher = new PublishBatcher(
      () => conn,
      (error, key) => new Error(`classified ${key}: ${(error as Error).message}`),
    )
    const first = batcher.push('ok', 'lone')
    const outcomes = await Promise.allSettled([first, batcher.push('bad', 'x1'), batcher.push('ok', 'y1'), batcher.push('bad', 'x2')])
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['fulfilled', 'rejected', 'fulfilled', 'rejected'],
    )
    assert.match(String((outcomes[1] as PromiseRejectedResult).reason), /^Error: classified bad: WRONGTYPE/)
  })

  it("LpushWire's bytes are what ioredis writes for the same LPUSH, a UTF-8 key and lengths across digit counts included", () => {
    const key = 'queue-ünï-🚀{tsq}'
    const payloads = [
      '',
      'x',
      'y'.repeat(9),
      'z'.repeat(10),
      'a'.repeat(99),
      'b'.repeat(100),
      `{"body": "${'Q'.repeat(1234)}"}`,
      '\\u00e9 \\ud83d\\ude80',
    ]
    const batch = new WireListBatch(key)
    for (const p of payloads) batch.add(p, { resolve: () => undefined, reject: () => undefined })
    const ours = batch.command().toWritable()
    const theirs = new Command('lpush', [key, ...payloads]).toWritable(undefined as never)
    const theirBytes = typeof theirs === 'string' ? Buffer.from(theirs, 'utf8') : theirs
    // ioredis writes the command's name as given; Redis reads it in any case.
    assert.equal(ours.toString('latin1'), theirBytes.toString('latin1').replace('$5\r\nlpush\r\n', '$5\r\nLPUSH\r\n'))
    assert.deepEqual(parseResp(ours), ['LPUSH', key, ...payloads])
  })

  it("TSQ_NO_LPUSH_WIRE (wire false): the same batches go through ioredis's own lpush", async () => {
    const { calls, conn } = recorder()
    const batcher = new PublishBatcher(() => conn, undefined, false)
    await Promise.all([batcher.push('a', 'a0'), batcher.push('a', 'a1'), batcher.push('b', 'b1'), batcher.push('a', 'a2')])
    assert.deepEqual(calls, [
      { key: 'a', values: ['a0'], wire: false },
      { key: 'a', values: ['a1', 'a2'], wire: false },
      { key: 'b', values: ['b1'], wire: false },
    ])
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
