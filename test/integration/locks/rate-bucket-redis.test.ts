// The cluster rate bucket's Lua, run by Redis on a fake clock (the `now` a
// test may pass): every answer and the schedule it stores are takeSlot's
// (rate-bucket.ts), booked returns included, over a long random sequence of takes; a rate set for the
// cluster (control rate_limit) overrides the caller's default at once, 0 lifts
// the limit, and forgetting it brings the default back; on Redis's own clock
// two stores (two workers) share one schedule.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { takeSlot, intervalUsOf } from '../../../src/locks/index.js'
import { RedisRateStore } from '../../../src/locks/rate-redis.js'
import { brokerSkipReason, REDIS_URL, uniqueName } from '../../helpers/brokers.js'

const skip = await brokerSkipReason('redis')
const URL_9 = REDIS_URL.replace(/\/\d*$/, '/9')
const T0 = 1_700_000_000_000_000

describe('cluster rate bucket in Redis', { skip }, () => {
  const stores: RedisRateStore[] = []
  const open = (options = {}) => {
    const s = new RedisRateStore(URL_9, options)
    stores.push(s)
    return s
  }
  after(async () => {
    for (const s of stores) await s.close()
  })

  it('answers as takeSlot does, take for take, on a fake clock', async () => {
    const store = open({ horizonMs: 300, burst: 2 })
    const bucket = uniqueName('rate')
    const interval = intervalUsOf(37)
    let tat: number | null = null
    let deferTat: number | null = null
    let now = T0
    let seed = 7
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647
    for (let i = 0; i < 400; i += 1) {
      // Bursts of takes (refusals, some long enough to be booked), then quiet spells.
      now += Math.floor(random() * (i % 50 < 40 ? 3_000 : 400_000))
      const deferAfterUs = i % 3 === 0 ? 100_000 : 0
      const want = takeSlot(tat, now, { intervalUs: interval, burst: 2, horizonUs: 300_000, deferAfterUs }, deferTat)
      const got = await store.take(bucket, interval, { nowUs: now, ...(deferAfterUs ? { deferAfterMs: deferAfterUs / 1000 } : {}) })
      assert.deepEqual(got, want.answer, `take ${i} at +${now - T0} µs`)
      if (want.tatUs !== null) tat = want.tatUs
      if (want.deferTatUs !== null) deferTat = want.deferTatUs
    }
  })

  it('a rate set for the cluster wins over the default; 0 lifts it; forgetting it restores the default', async () => {
    const store = open()
    const bucket = uniqueName('rate')
    const slow = intervalUsOf(1)
    assert.equal((await store.take(bucket, slow, { nowUs: T0 })).kind, 'now')
    assert.equal((await store.take(bucket, slow, { nowUs: T0 })).kind, 'refused')
    await store.setRate(bucket, { text: '1000/s', intervalUs: intervalUsOf(1000) })
    assert.deepEqual(await store.rateOf(bucket), { text: '1000/s', intervalUs: 1000 })
    // The schedule still holds the slot taken at 1/s: the next free one is a second on.
    assert.equal((await store.take(bucket, slow, { nowUs: T0 + 1_000_000 })).kind, 'now')
    assert.equal((await store.take(bucket, slow, { nowUs: T0 + 1_000_000 })).waitUs, 1000)
    await store.setRate(bucket, { text: '0', intervalUs: 0 })
    for (let i = 0; i < 5; i += 1) assert.equal((await store.take(bucket, slow, { nowUs: T0 + 1_000_000 })).kind, 'now')
    await store.setRate(bucket, null)
    assert.equal(await store.rateOf(bucket), null)
    // Back at 1/s: the slot after the two taken at 1000/s, then none within the horizon.
    assert.deepEqual(await store.take(bucket, slow, { nowUs: T0 + 1_000_000 }), { kind: 'reserved', waitUs: 2000, slotUs: T0 + 1_002_000 })
    assert.equal((await store.take(bucket, slow, { nowUs: T0 + 1_000_000 })).kind, 'refused')
  })

  it("on Redis's clock, two stores share one schedule", async () => {
    const [a, b] = [open(), open()]
    const bucket = uniqueName('rate')
    const interval = intervalUsOf(20)
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? a : b).take(bucket, interval)))
    const slots = answers
      .filter((x) => x.kind !== 'refused')
      .map((x) => x.slotUs)
      .sort((x, y) => x - y)
    // One now, then reserved 50 ms apart up to the 500 ms horizon: 11 slots, the rest refused.
    assert.equal(slots.length, 11)
    for (let i = 1; i < slots.length; i += 1) assert.equal(slots[i]! - slots[i - 1]!, interval)
    assert.equal(answers.filter((x) => x.kind === 'refused').length, 1)
  })
})
