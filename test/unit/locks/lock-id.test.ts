import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, it } from 'node:test'
import { lockIdFor, parameterNames } from '../../../src/locks/lock-id.js'
import { lockedRetryDelay } from '../../../src/locks/task-lock.js'

describe('lock ids', () => {
  it('is the cookbook <task>-lock-<md5> of a string key', () => {
    const md5 = createHash('md5').update('http://x/feed').digest('hex')
    assert.equal(lockIdFor('feeds.import', { key: (url: unknown) => url }, ['http://x/feed'], {}), `feeds.import-lock-${md5}`)
  })
  it('is one lock per task without a key', () => {
    assert.equal(lockIdFor('t', {}, [1], {}), 't-lock')
    assert.equal(lockIdFor('t', {}, [2], {}), 't-lock')
  })
  it('takes argument names from kwargs, else positions', () => {
    const fn = (a: number, b: number) => a + b
    const names = parameterNames(fn)
    assert.deepEqual(names, ['a', 'b'])
    assert.equal(lockIdFor('t', { key: ['b'] }, [1, 2], {}, names), lockIdFor('t', { key: ['b'] }, [9], { b: 2 }, names))
    assert.notEqual(lockIdFor('t', { key: ['b'] }, [1, 2], {}, names), lockIdFor('t', { key: ['b'] }, [1, 3], {}, names))
  })
  it('hashes objects with sorted keys', () => {
    assert.equal(lockIdFor('t', { key: () => ({ a: 1, b: 2 }) }, [], {}), lockIdFor('t', { key: () => ({ b: 2, a: 1 }) }, [], {}))
  })
  it('lets a throwing key function throw', () => {
    assert.throws(
      () =>
        lockIdFor(
          't',
          {
            key: () => {
              throw new TypeError('nope')
            },
          },
          [],
          {},
        ),
      /nope/,
    )
  })
  it('retries after retryDelay plus up to 1 s of jitter', () => {
    assert.equal(
      lockedRetryDelay({}, () => 0),
      1,
    )
    assert.equal(
      lockedRetryDelay({ retryDelay: 3 }, () => 0.5),
      3.5,
    )
  })
})

describe('retries of a locked task', () => {
  it('[maxRetries: null] retries for ever, as Celery max_retries=None; unset is 3', async () => {
    const { retriesExhausted } = await import('../../../src/app/execution/executor.js')
    assert.equal(retriesExhausted(50, null, null), false)
    assert.equal(retriesExhausted(3, null, undefined), true)
    assert.equal(retriesExhausted(2, null, undefined), false)
    assert.equal(retriesExhausted(5, 5, null), true)
  })
})
