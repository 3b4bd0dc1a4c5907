// Stored beat entries (a RedBeat hash, a schedule file, a django row) that are
// not what tsq wrote: unreadable JSON, a non-object, an oversized or too-deep
// text are an EntryError in one line; a last_run_at that is no time reads as
// "never ran" instead of throwing a RangeError.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { EntryError, MAX_ENTRY_CHARS, decodeDefinition, decodeMeta, encodeDefinition, intervalJson } from '../../../src/beat/entry.js'

const oneLine =
  (pattern: RegExp) =>
  (e: unknown): boolean =>
    e instanceof EntryError && pattern.test(e.message) && !e.message.includes('\n')

describe('decoding stored beat entries', () => {
  it('unreadable, non-object, oversized and too-deep definitions are EntryErrors', () => {
    assert.throws(() => decodeDefinition('{"name": '), oneLine(/^malformed entry definition: /))
    assert.throws(() => decodeDefinition('null'), oneLine(/^malformed entry definition: not a JSON object$/))
    assert.throws(
      () => decodeDefinition(`{"name": "x", "task": "t", "schedule": 5, "args": ["${'x'.repeat(MAX_ENTRY_CHARS)}"]}`),
      oneLine(/over the limit of 1048576$/),
    )
    assert.throws(
      () => decodeDefinition(`{"name": "x", "task": "t", "schedule": 5, "args": ${'['.repeat(2000)}${']'.repeat(2000)}}`),
      oneLine(/nests deeper than 1000 levels$/),
    )
    const ok = { name: 'x', task: 't', args: [1], kwargs: {}, options: {}, schedule: intervalJson(5), enabled: true }
    assert.deepEqual(decodeDefinition(encodeDefinition(ok)), ok)
  })

  it('meta: null and arrays are EntryErrors; a last_run_at that is no time is null', () => {
    assert.throws(() => decodeMeta('null'), oneLine(/^malformed entry meta: not a JSON object$/))
    assert.throws(() => decodeMeta('[1]'), oneLine(/^malformed entry meta/))
    const at = (fields: Record<string, unknown>) =>
      JSON.stringify({
        last_run_at: {
          __type__: 'datetime',
          year: 2026,
          month: 1,
          day: 2,
          hour: 3,
          minute: 4,
          second: 5,
          microsecond: 0,
          timezone: 0,
          ...fields,
        },
        total_run_count: 3,
      })
    assert.deepEqual(decodeMeta(at({ year: 'x' })), { lastRunAt: null, totalRunCount: 3 })
    assert.deepEqual(decodeMeta(at({ timezone: 'Not/AZone' })), { lastRunAt: null, totalRunCount: 3 })
    assert.deepEqual(decodeMeta(at({})), { lastRunAt: Date.UTC(2026, 0, 2, 3, 4, 5), totalRunCount: 3 })
  })
})
