// ClaimOverlap: the claim loop splits its window while the main thread is not
// kept waiting for a CPU, with a gap between the thresholds, and never where
// the kernel does not say.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { describe, it } from 'node:test'
import { ClaimOverlap, readRunDelayNs } from '../../../src/transport/redis/tricks/claim-overlap.js'

/** A clock and a run-delay counter the test moves by hand; `reads` counts the counter's reads. */
function fakeCpu() {
  const state = { now: 1_000, delayNs: 0, reads: 0 }
  const read = () => {
    state.reads += 1
    return state.delayNs
  }
  /** `ms` of wall time pass, of which `share` waiting for a CPU. */
  const pass = (ms: number, share: number) => {
    state.now += ms
    state.delayNs += ms * share * 1e6
  }
  return { state, read, pass, overlap: new ClaimOverlap(read, () => state.now) }
}

describe('ClaimOverlap', () => {
  it('never splits where the kernel gives no run-delay counter', () => {
    const overlap = new ClaimOverlap(
      () => undefined,
      () => 0,
    )
    assert.equal(overlap.split(), false)
  })

  it('splits on a free machine, goes whole above 30% run delay, splits again only below 20%', () => {
    const { overlap, pass } = fakeCpu()
    assert.equal(overlap.split(), true, 'on from the start (the first sample only sets the baseline)')
    pass(100, 0.1)
    assert.equal(overlap.split(), true)
    pass(100, 0.45)
    assert.equal(overlap.split(), false, 'busy: whole')
    pass(100, 0.25)
    assert.equal(overlap.split(), false, 'between the thresholds: stays whole')
    pass(100, 0.1)
    assert.equal(overlap.split(), true, 'free again: split')
    pass(100, 0.25)
    assert.equal(overlap.split(), true, 'between the thresholds: stays split')
  })

  it('reads the counter at most once per 100 ms', () => {
    const { overlap, pass, state } = fakeCpu()
    overlap.split()
    const before = state.reads
    for (let i = 0; i < 50; i++) {
      pass(1, 0.9)
      overlap.split()
    }
    assert.equal(state.reads - before, 0, 'no read within 100 ms of the last')
    pass(50, 0.9)
    assert.equal(overlap.split(), false, 'the read after 100 ms sees the busy share')
    assert.equal(state.reads - before, 1)
  })

  it('ignores a sample over a pause in claiming', () => {
    const { overlap, pass } = fakeCpu()
    overlap.split()
    // A second of idling with a burst of run delay in it: not the cores now.
    pass(1_000, 0.5)
    assert.equal(overlap.split(), true)
    pass(100, 0.1)
    assert.equal(overlap.split(), true)
  })

  it("reads this process's counter where the kernel has one", () => {
    const delay = readRunDelayNs()
    if (!existsSync('/proc/self/schedstat')) {
      assert.equal(delay, undefined)
      return
    }
    assert.equal(typeof delay, 'number')
    assert.ok(Number.isFinite(delay) && delay! >= 0)
  })
})
