// Spec §2.3: the Redis result backend's chord counters, on a real Redis, as
// Celery 5.2.6 keeps them (captured with MONITOR from a Python worker):
// ZADD `.j` by group_index, ZCOUNT, GET `.t` and `.s`, EXPIRE all three in one
// MULTI; the part that completes the count reads `.j` in order and deletes it.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { RedisResultBackend } from '../../../src/backends/redis-backend.js'
import { encodeChordPart } from '../../../src/protocol/index.js'
import { brokerSkipReason } from '../../helpers/brokers.js'

const URL = 'redis://127.0.0.1:6379/1'
const skip = await brokerSkipReason('redis')

describe('spec §2.3: chord counters in the Redis result backend', { skip }, () => {
  let backend: RedisResultBackend
  let redis: Redis
  const groups: string[] = []

  before(() => {
    backend = new RedisResultBackend(URL)
    redis = new Redis(URL)
  })

  after(async () => {
    for (const gid of groups)
      await redis.del(`celery-taskset-meta-${gid}`, ...['.j', '.t', '.s'].map((s) => `celery-taskset-meta-${gid}${s}`))
    await backend.close()
    redis.disconnect()
  })

  /** A chord id with its size set as the Python client sets it (SETEX `.s`). */
  async function chordOfSize(size: number): Promise<string> {
    const gid = randomUUID()
    groups.push(gid)
    await redis.setex(`celery-taskset-meta-${gid}.s`, 86_400, String(size))
    return gid
  }

  it('only the part that completes the count gets the parts, in group_index order, and the keys go', async () => {
    const gid = await chordOfSize(3)
    const ids = [randomUUID(), randomUUID(), randomUUID()]
    assert.equal(await backend.chordPartReturn(gid, 2, encodeChordPart(ids[2]!, 'SUCCESS', 4)), null)
    assert.ok((await redis.ttl(`celery-taskset-meta-${gid}.j`)) > 86_000, 'the parts expire with the results')
    assert.equal(await backend.chordPartReturn(gid, 0, encodeChordPart(ids[0]!, 'SUCCESS', 0)), null)
    const parts = await backend.chordPartReturn(gid, 1, encodeChordPart(ids[1]!, 'SUCCESS', 2))
    assert.deepEqual(parts, [`[1, "${ids[0]}", "SUCCESS", 0]`, `[1, "${ids[1]}", "SUCCESS", 2]`, `[1, "${ids[2]}", "SUCCESS", 4]`])
    assert.equal(await redis.exists(`celery-taskset-meta-${gid}.j`, `celery-taskset-meta-${gid}.s`), 0)
  })

  it('parts finishing at once: exactly one of them completes the chord', async () => {
    const gid = await chordOfSize(20)
    const all = await Promise.all(
      Array.from({ length: 20 }, (_, i) => backend.chordPartReturn(gid, i, encodeChordPart(randomUUID(), 'SUCCESS', i))),
    )
    const completing = all.filter((parts) => parts !== null)
    assert.equal(completing.length, 1)
    assert.equal(completing[0]!.length, 20)
  })

  it('`.t` (header tasks added while it runs) raises the count to wait for', async () => {
    const gid = await chordOfSize(1)
    await redis.incr(`celery-taskset-meta-${gid}.t`)
    assert.equal(await backend.chordPartReturn(gid, 0, encodeChordPart(randomUUID(), 'SUCCESS', 1)), null)
    assert.equal((await backend.chordPartReturn(gid, 1, encodeChordPart(randomUUID(), 'SUCCESS', 2)))?.length, 2)
  })

  it('no size yet (the client has not finished sending the header): nothing completes', async () => {
    const gid = randomUUID()
    groups.push(gid)
    assert.equal(await backend.chordPartReturn(gid, null, encodeChordPart(randomUUID(), 'SUCCESS', 1)), null)
    // group_index None scores +inf, as Celery does.
    assert.equal(await redis.zscore(`celery-taskset-meta-${gid}.j`, (await redis.zrange(`celery-taskset-meta-${gid}.j`, 0, -1))[0]!), 'inf')
  })

  it('a header saved whole (it holds a group) is Celery\'s GroupResult.save: SETEX of {"result": as_tuple()}, read back by restore; completion still returns the parts', async () => {
    const gid = await chordOfSize(1)
    const tuple = [
      [gid, null],
      [
        [['a', null], null],
        [
          [gid, [['b', null], null]],
          [
            [['c', null], null],
            [['d', null], null],
          ],
        ],
      ],
    ]
    await backend.saveGroupResult(gid, tuple)
    // Byte for byte what Celery 5.2.6's worker wrote (captured with MONITOR), TTL as result_expires.
    assert.equal(
      await redis.get(`celery-taskset-meta-${gid}`),
      `{"result": [["${gid}", null], [[["a", null], null], [["${gid}", [["b", null], null]], [[["c", null], null], [["d", null], null]]]]]}`,
    )
    assert.ok((await redis.ttl(`celery-taskset-meta-${gid}`)) > 86_000)
    assert.deepEqual(await backend.restoreGroupResult(gid), tuple)
    assert.equal(await backend.restoreGroupResult(randomUUID()), null)
    const id = randomUUID()
    assert.deepEqual(await backend.chordPartReturn(gid, 0, encodeChordPart(id, 'SUCCESS', 1)), [encodeChordPart(id, 'SUCCESS', 1)])
    assert.equal(await redis.exists(`celery-taskset-meta-${gid}.j`), 0)
  })
})
