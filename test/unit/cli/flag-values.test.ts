// A flag's bad value is one line in click's words, as Celery prints it.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { InvalidValueError, optionLabel } from '../../../src/cli/errors.js'
import { exitCodeFor } from '../../../src/cli/exit-codes.js'
import { choiceValue, floatValue, integerValue } from '../../../src/cli/flags/flag-values.js'

function message(fn: () => unknown): string {
  try {
    fn()
  } catch (error) {
    assert.ok(error instanceof InvalidValueError)
    assert.equal(exitCodeFor(error), 64)
    return error.line
  }
  assert.fail('no error')
}

describe('flag values, as click reads them for Celery', () => {
  const c = optionLabel('concurrency', 'c')
  it('labels an option as click does', () => {
    assert.equal(c, "'-c' / '--concurrency'")
    assert.equal(optionLabel('time-limit'), "'--time-limit'")
  })
  it('integers', () => {
    assert.equal(integerValue(c, '4'), 4)
    assert.equal(integerValue(c, '-2'), -2)
    assert.equal(
      message(() => integerValue(c, 'abc')),
      "Invalid value for '-c' / '--concurrency': 'abc' is not a valid integer.",
    )
    assert.equal(
      message(() => integerValue(c, '1.5')),
      "Invalid value for '-c' / '--concurrency': '1.5' is not a valid integer.",
    )
    assert.equal(
      message(() => integerValue(c, '0', { min: 1 })),
      "Invalid value for '-c' / '--concurrency': 0 is not in the range x>=1.",
    )
    assert.equal(
      message(() => integerValue("'--priority'", '300', { min: 0, max: 255 })),
      "Invalid value for '--priority': 300 is not in the range 0<=x<=255.",
    )
  })
  it('floats', () => {
    assert.equal(floatValue("'--time-limit'", '1.5'), 1.5)
    assert.equal(
      message(() => floatValue("'--time-limit'", 'x')),
      "Invalid value for '--time-limit': 'x' is not a valid float.",
    )
    assert.equal(
      message(() => floatValue("'--time-limit'", '')),
      "Invalid value for '--time-limit': '' is not a valid float.",
    )
    assert.equal(
      message(() => floatValue("'-t' / '--timeout'", '0', { min: 0, minOpen: true })),
      "Invalid value for '-t' / '--timeout': 0 is not in the range x>0.",
    )
  })
  it('choices', () => {
    assert.equal(choiceValue("'-P' / '--pool'", 'solo', ['prefork', 'solo']), 'solo')
    assert.equal(
      message(() => choiceValue("'-P' / '--pool'", 'bogus', ['prefork', 'solo'])),
      "Invalid value for '-P' / '--pool': 'bogus' is not one of 'prefork', 'solo'.",
    )
    assert.equal(
      message(() => choiceValue("'--x'", "it's", ['a'])),
      `Invalid value for '--x': "it's" is not 'a'.`,
    )
  })
})
