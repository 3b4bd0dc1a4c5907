// A cluster-wide rate limit's bucket, on a fake clock: slots come at exactly
// the rate, a take reserves at most the horizon ahead and is refused beyond it
// (with the time until there is room), a burst allows that many at once after
// an idle spell, no limit always runs, and a new rate is in force within the
// horizon. The Lua the Redis store runs is checked against this logic on a
// real Redis (test/integration/locks/rate-bucket-redis.test.ts).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { intervalUsOf, takeSlot, type BucketParams } from '../../../src/locks/index.js'

const MS = 1000
const T0 = 1_700_000_000_000 * MS

function params(perSecond: number, over: Partial<BucketParams> = {}): BucketParams {
  return { intervalUs: intervalUsOf(perSecond), burst: 1, horizonUs: 500 * MS, ...over }
}

/** Takes as fast as asked for `seconds`, starting runs at their slots; the slots that start within the window. */
function saturate(p: BucketParams, seconds: number, stepUs = 1 * MS): number[] {
  let tat: number | null = null
  const starts: number[] = []
  for (let now = T0; now < T0 + seconds * 1_000_000; now += stepUs) {
    for (;;) {
      const { answer, tatUs } = takeSlot(tat, now, p)
      if (answer.kind === 'refused') break
      tat = tatUs
      starts.push(now + answer.waitUs)
    }
  }
  return starts.filter((s) => s < T0 + seconds * 1_000_000)
}

describe('rate bucket (GCRA slots)', () => {
  it('gives slots at exactly the rate, one interval apart', () => {
    const starts = saturate(params(50), 60)
    assert.equal(starts.length, 3000)
    for (let i = 1; i < starts.length; i += 1) assert.equal(starts[i]! - starts[i - 1]!, 20 * MS)
  })

  it('runs now when the schedule is free, reserves a little ahead, refuses past the horizon', () => {
    const p = params(10) // 100 ms apart, 500 ms horizon
    let r = takeSlot(null, T0, p)
    assert.deepEqual(r.answer, { kind: 'now', waitUs: 0, slotUs: T0 })
    let tat = r.tatUs
    for (let i = 1; i <= 5; i += 1) {
      r = takeSlot(tat, T0, p)
      assert.equal(r.answer.kind, 'reserved')
      assert.equal(r.answer.waitUs, i * 100 * MS)
      tat = r.tatUs
    }
    r = takeSlot(tat, T0, p)
    assert.equal(r.answer.kind, 'refused')
    assert.equal(r.answer.waitUs, 100 * MS, 'room in the horizon in one interval')
    assert.equal(r.tatUs, null, 'a refusal stores nothing')
    r = takeSlot(tat, T0 + 100 * MS, p)
    assert.equal(r.answer.kind, 'reserved')
  })

  it('after an idle spell, a burst of N runs at once, then the rate', () => {
    const p = params(10, { burst: 3 })
    let tat: number | null = T0
    const now = T0 + 10_000 * MS
    const kinds: string[] = []
    for (let i = 0; i < 4; i += 1) {
      const r = takeSlot(tat, now, p)
      kinds.push(r.answer.kind)
      tat = r.tatUs
    }
    assert.deepEqual(kinds, ['now', 'now', 'now', 'reserved'])
  })

  it('a long refusal books turns to come back, one interval apart, from the first free slot', () => {
    const p = params(0.1, { deferAfterUs: 2000 * MS }) // 10 s apart
    let r = takeSlot(null, T0, p)
    assert.equal(r.answer.kind, 'now')
    const tat = r.tatUs
    let deferTat: number | null = null
    const backs: number[] = []
    for (let i = 0; i < 3; i += 1) {
      r = takeSlot(tat, T0, p, deferTat)
      assert.equal(r.answer.kind, 'deferred')
      assert.equal(r.tatUs, null, 'the slot schedule is untouched')
      deferTat = r.deferTatUs
      backs.push(r.answer.waitUs)
    }
    // Turns at 10, 20, 30 s; each comes back when its turn is within the 500 ms horizon.
    assert.deepEqual(backs, [9_500 * MS, 19_500 * MS, 29_500 * MS])
    // A refusal shorter than deferAfter is an ordinary one.
    r = takeSlot(tat, T0 + 9_000 * MS, p, deferTat)
    assert.deepEqual(r.answer, { kind: 'refused', waitUs: 500 * MS, slotUs: T0 + 10_000 * MS })
  })

  it('no limit (interval 0) always runs now and stores nothing', () => {
    const r = takeSlot(T0 + 99_000 * MS, T0, params(0))
    assert.deepEqual(r, { answer: { kind: 'now', waitUs: 0, slotUs: T0 }, tatUs: null, deferTatUs: null })
  })

  it('a new rate is in force within the horizon', () => {
    let rate = 50
    const change = T0 + 10_000_000
    let tat: number | null = null
    const seen: number[] = []
    for (let now = T0; now < T0 + 20_000_000; now += MS) {
      if (now === change) rate = 5
      for (;;) {
        const { answer, tatUs } = takeSlot(tat, now, params(rate))
        if (answer.kind === 'refused') break
        tat = tatUs
        seen.push(now + answer.waitUs)
      }
    }
    const horizonAfter = change + 500 * MS
    const late = seen.filter((s) => s >= horizonAfter + 20 * MS)
    for (let i = 1; i < late.length; i += 1) assert.equal(late[i]! - late[i - 1]!, 200 * MS)
    // 10 s at 5/s after the change, give or take the slots reserved at 50/s within the horizon.
    const afterChange = seen.filter((s) => s >= change && s < T0 + 20_000_000).length
    assert.ok(afterChange >= 50 && afterChange <= 50 + 26, `after the change: ${afterChange}`)
  })

  it('reads intervals from rates as Celery writes them', () => {
    assert.equal(intervalUsOf(50), 20_000)
    assert.equal(intervalUsOf(10 / 60), 6_000_000)
    assert.equal(intervalUsOf(0), 0)
  })
})
