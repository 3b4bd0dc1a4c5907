// A delay past Node's 32-bit timer limit (24.8 days) must not fire at once:
// an ETA or a time limit that long reaches the worker from Python intact.
import assert from 'node:assert/strict'
import { describe, it, mock } from 'node:test'
import type { App } from '../../../src/app/app.js'
import { currentTask } from '../../../src/app/task-context.js'
import { setLongTimeout } from '../../../src/app/execution/long-timeout.js'
import { executeJob } from '../../../src/app/execution/executor.js'
import type { Job } from '../../../src/app/execution/jobs.js'
import { SoloPool } from '../../../src/worker/pools/solo-pool.js'

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

// Time limits of the solo pool (hard) and of every slot's executor (soft) go
// through setLongTimeout too: with a plain setTimeout a 30-day limit fired
// after 1 ms and failed a task that had barely started. Real timers here, as
// the overflow is Node's own; the task ends well inside the wait.
describe('[time limits] past 2**31-1 ms', () => {
  const THIRTY_DAYS_S = 30 * 24 * 60 * 60
  /** A task that sleeps `ms`, and fails at once when its AbortSignal fires (a soft time limit). */
  const sleepy = (ms: number): App => {
    const fn = () =>
      new Promise((resolve, reject) => {
        const { signal } = currentTask()
        const timer = setTimeout(() => resolve(ms), ms)
        signal.addEventListener('abort', () => {
          clearTimeout(timer)
          reject(signal.reason)
        })
      })
    return { tasks: new Map([['t.sleep', { fn, options: {} }]]) } as unknown as App
  }
  const job = (softTimeLimit: number | null): Job => ({
    id: 'lt-1',
    task: 't.sleep',
    args: [],
    kwargs: {},
    retries: 0,
    rootId: null,
    parentId: null,
    group: null,
    hostname: 'w@h',
    softTimeLimit,
  })

  it('a 30-day soft time limit does not abort the task (executor)', async () => {
    const outcome = await executeJob(sleepy(30), job(THIRTY_DAYS_S)).outcome
    assert.deepEqual(
      { status: outcome.status, value: outcome.status === 'success' ? outcome.value : undefined },
      { status: 'success', value: 30 },
    )
  })

  it('a 30-day hard time limit does not end the task (solo pool)', async () => {
    const solo = new SoloPool(sleepy(30), 1)
    const outcome = await solo.run(job(null), THIRTY_DAYS_S)
    assert.deepEqual(
      { status: outcome.status, value: outcome.status === 'success' ? outcome.value : undefined },
      { status: 'success', value: 30 },
    )
  })
})
