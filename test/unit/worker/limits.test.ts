import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { LimitedSet } from '../../../src/worker/control/limited-set.js'
import { parseRate, TokenBucket } from '../../../src/worker/task-path/limits.js'

describe("revoked LimitedSet keeps Celery's limits", () => {
  it('forgets entries after the expiry', () => {
    let now = 1000
    const set = new LimitedSet(50_000, 10_800, () => now)
    set.add('a')
    now += 10_799
    assert.equal(set.has('a'), true)
    now += 2
    assert.equal(set.has('a'), false)
  })
  it('drops the oldest beyond maxlen', () => {
    let now = 0
    const set = new LimitedSet(3, 10_800, () => now++)
    for (const id of ['a', 'b', 'c', 'd']) set.add(id)
    assert.deepEqual(set.ids(), ['b', 'c', 'd'])
  })
  it('round-trips through the mingle wire form', () => {
    const a = new LimitedSet(10, 100, () => 5)
    a.add('x')
    const b = new LimitedSet(10, 100, () => 5)
    b.merge(a.toWire())
    assert.deepEqual(a.toWire(), { x: [5, 'x'] })
    assert.equal(b.has('x'), true)
  })
})

describe('rate limits as Celery parses them', () => {
  it('parses s/m/h and numbers', () => {
    assert.equal(parseRate('10/s'), 10)
    assert.equal(parseRate('120/m'), 2)
    assert.equal(parseRate('3600/h'), 1)
    assert.equal(parseRate(5), 5)
    assert.equal(parseRate('7'), 7)
    assert.equal(parseRate(null), 0)
    assert.equal(parseRate(''), 0)
    assert.throws(() => parseRate('ten per second'), /Invalid rate limit/)
  })
  it('token bucket spaces tasks out', () => {
    let now = 0
    const bucket = new TokenBucket(2, 1, () => now)
    assert.equal(bucket.take(), 0)
    assert.equal(bucket.take(), 0.5)
    now = 0.5
    assert.equal(bucket.peek(), 0)
    assert.equal(bucket.take(), 0)
  })
})
