// A stray error from task code is logged and the worker goes on; a broken
// pipe under the log itself is not, or reporting it would write to it again
// for ever (`tsq worker | head` spun at 100% CPU).
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { strayErrorListeners } from '../../../src/worker/stray-errors.js'

it('[stray] an uncaught exception and an unhandled rejection are reported; a broken pipe is not', () => {
  const reported: string[] = []
  const { onException, onRejection } = strayErrorListeners((message) => reported.push(message))
  onException(new Error('from a timer'))
  onRejection(new TypeError('from a promise'))
  onRejection('a plain reason')
  onException(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }))
  onException(Object.assign(new Error('Cannot call write after a stream was destroyed'), { code: 'ERR_STREAM_DESTROYED' }))
  assert.equal(reported.length, 3, reported.join('\n'))
  assert.match(reported[0]!, /^Uncaught exception in task code \(the worker goes on\): Error: from a timer\n\s+at /)
  assert.match(reported[1]!, /^Unhandled promise rejection in task code \(the worker goes on\): TypeError: from a promise/)
  assert.equal(reported[2], 'Unhandled promise rejection in task code (the worker goes on): a plain reason')
})
