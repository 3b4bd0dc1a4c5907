// A delay past Node's 32-bit timer limit (24.8 days) must not fire at once:
// an ETA or a time limit that long reaches the worker from Python intact.
import assert from 'node:assert/strict'
import { it, mock } from 'node:test'
import { setLongTimeout } from '../../../src/worker/long-timeout.js'

const DAY = 24 * 60 * 60 * 1000

it('[long-timeout] fires after 30 days, not at once, and not before', () => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 })
  try {
    let fired = 0
    setLongTimeout(() => (fired += 1), 30 * DAY)
    mock.timers.tick(1)
    assert.equal(fired, 0)
    mock.timers.tick(25 * DAY)
    assert.equal(fired, 0)
    mock.timers.tick(5 * DAY - 2)
    assert.equal(fired, 0)
    mock.timers.tick(1)
    assert.equal(fired, 1)
  } finally {
    mock.timers.reset()
  }
})

it('[long-timeout] clear() cancels it, also after a re-arm', () => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 })
  try {
    let fired = 0
    const t = setLongTimeout(() => (fired += 1), 60 * DAY)
    mock.timers.tick(26 * DAY)
    t.clear()
    mock.timers.tick(40 * DAY)
    assert.equal(fired, 0)
  } finally {
    mock.timers.reset()
  }
})
