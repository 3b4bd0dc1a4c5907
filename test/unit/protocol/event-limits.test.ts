// Event bodies over the depth or size limit are refused on their text, before
// any parse, and the same limits hold for an event already parsed; ordinary
// events and batches, and brackets inside strings, pass.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  checkEventText,
  checkEventValue,
  decodeEvents,
  EventLimitError,
  MalformedMessageError,
  MAX_EVENT_DEPTH,
} from '../../../src/protocol/index.js'

const event = {
  type: 'task-received',
  uuid: 'u1',
  name: 'proj.add',
  args: '([[[1]]],)',
  kwargs: '{}',
  hostname: 'celery@a',
  loadavg: [0.1, 0.2, 0.3],
}

test('ordinary events, batches and brackets inside strings pass', () => {
  assert.deepEqual(decodeEvents(JSON.stringify(event)), [event])
  assert.equal(decodeEvents(JSON.stringify([event, event])).length, 2)
  checkEventText(JSON.stringify({ args: '['.repeat(10_000), q: '\\"[[[' }))
  checkEventValue(event)
})

test('a body nesting 10,000 levels is refused before parsing, as a malformed message', () => {
  const deep = JSON.stringify(event).replace('"([[[1]]],)"', `${'['.repeat(10_000)}${']'.repeat(10_000)}`)
  assert.throws(
    () => decodeEvents(deep),
    (e: unknown) => e instanceof EventLimitError && e instanceof MalformedMessageError && /nests deeper than 32 levels/.test(e.message),
  )
  assert.throws(() => checkEventText(`${'{"a":'.repeat(MAX_EVENT_DEPTH + 1)}1${'}'.repeat(MAX_EVENT_DEPTH + 1)}`), EventLimitError)
  checkEventText(`${'{"a":'.repeat(MAX_EVENT_DEPTH)}1${'}'.repeat(MAX_EVENT_DEPTH)}`)
})

test('a body over the size limit is refused', () => {
  assert.throws(() => checkEventText('x'.repeat(101), 32, 100), /101 characters, over the limit of 100/)
})

test('an event already parsed: depth and value count, without recursion', () => {
  let deep: unknown = 1
  for (let i = 0; i < 100_000; i++) deep = [deep]
  assert.throws(() => checkEventValue({ ...event, args: deep }), /nests deeper than 32 levels/)
  assert.throws(() => checkEventValue({ ...event, args: Array.from({ length: 200 }, () => 0) }, 32, 100), /more than 100 values/)
})
