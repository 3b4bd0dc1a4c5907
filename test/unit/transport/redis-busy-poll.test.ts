// The claim loop's busy polling: the event loop is kept awake only while a
// claim's answer is due, for at most the budget after the last claim went out,
// and not at all once answers come back slower than the budget.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { BusyPoll } from '../../../src/transport/redis/tricks/busy-poll.js'

/** A BusyPoll on a hand-moved clock whose deferred ticks run only when `turn()` is called. */
function harness() {
  let clock = 0
  let queued: Array<() => void> = []
  const poll = new BusyPoll(
    () => clock,
    (fn) => void queued.push(fn),
  )
  return {
    poll,
    advance(ms: number) {
      clock += ms
    },
    /** One turn of the event loop: the ticks queued so far run. */
    turn() {
      const now = queued
      queued = []
      for (const fn of now) fn()
    },
    get pending() {
      return queued.length
    },
  }
}

/** A reply whose answer the test gives; settles after its microtasks run. */
function reply() {
  let answer!: () => void
  const promise = new Promise<void>((resolve) => (answer = resolve))
  return {
    promise,
    answer: async () => {
      answer()
      await promise
      await Promise.resolve()
    },
  }
}

describe('Redis claim busy polling', () => {
  it('polls while the answer is due and stops when it comes', async () => {
    const h = harness()
    const r = reply()
    h.poll.sent(r.promise)
    assert.equal(h.poll.active, true)
    h.advance(0.05)
    h.turn()
    assert.equal(h.pending, 1, 'still waiting: another turn is queued')
    await r.answer()
    h.turn()
    assert.equal(h.poll.active, false)
    assert.equal(h.pending, 0)
  })

  it('stops after the budget even with the answer still out', () => {
    const h = harness()
    h.poll.sent(new Promise(() => undefined))
    h.advance(0.2)
    h.turn()
    assert.equal(h.poll.active, true)
    h.advance(0.2)
    h.turn()
    assert.equal(h.poll.active, false)
    assert.equal(h.pending, 0)
  })

  it('a second claim extends the budget without a second poller', () => {
    const h = harness()
    h.poll.sent(new Promise(() => undefined))
    h.advance(0.2)
    h.poll.sent(new Promise(() => undefined))
    assert.equal(h.pending, 1)
    h.advance(0.2)
    h.turn()
    assert.equal(h.poll.active, true, '0.2 ms after the second claim: within its budget')
    h.advance(0.2)
    h.turn()
    assert.equal(h.poll.active, false)
  })

  it('answers slower than the budget turn it off, quick ones turn it on again', async () => {
    const h = harness()
    // Far slower answers (a Redis across a network): the moving mean climbs over the budget.
    for (let i = 0; i < 3; i += 1) {
      const r = reply()
      h.poll.sent(r.promise)
      h.advance(5)
      h.turn()
      await r.answer()
      h.turn()
    }
    h.poll.sent(new Promise(() => undefined))
    assert.equal(h.poll.active, false, 'no polling for an answer that polling cannot bring sooner')
    assert.equal(h.pending, 0)
    // Quick answers bring the mean back under the budget.
    for (let i = 0; i < 40; i += 1) {
      const r = reply()
      h.poll.sent(r.promise)
      h.advance(0.05)
      await r.answer()
      h.turn()
    }
    h.poll.sent(new Promise(() => undefined))
    assert.equal(h.poll.active, true)
  })

  it('a failed claim counts as answered', async () => {
    const h = harness()
    let fail!: (e: Error) => void
    const failing = new Promise<void>((_, reject) => (fail = reject))
    failing.catch(() => undefined)
    h.poll.sent(failing)
    fail(new Error('connection lost'))
    await failing.catch(() => undefined)
    await Promise.resolve()
    h.turn()
    assert.equal(h.poll.active, false)
  })

  it('stop() ends the polling at the next turn and starts no more', () => {
    const h = harness()
    h.poll.sent(new Promise(() => undefined))
    h.poll.stop()
    h.turn()
    assert.equal(h.poll.active, false)
    h.poll.sent(new Promise(() => undefined))
    assert.equal(h.pending, 0)
  })
})
