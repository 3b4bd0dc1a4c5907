// Reading a task's kwargs back from the repr an event carries (what Flower's
// `kwargs:key=value` search needs): flat dicts as Celery's kwargsrepr writes
// them give their items; anything else is refused, never thrown on, and a
// long hostile text is read in one pass.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { kwargsRepr, readFlatDictRepr } from '../../../src/protocol/index.js'

describe("readFlatDictRepr: a flat dict as Python's repr writes it", () => {
  it('strings, numbers, None, True and False, single or double quoted', () => {
    assert.deepEqual(readFlatDictRepr("{'a': 1, 'b': 'x y', 'c': None, \"d\": True, 'e': -1.5e3}"), [
      ['a', '1'],
      ['b', 'x y'],
      ['c', 'None'],
      ['d', 'True'],
      ['e', '-1.5e3'],
    ])
    assert.deepEqual(
      readFlatDictRepr(`{'q': "it's", 'r': 'a\\'b'}`),
      [
        ['q', "it's"],
        ['r', "a\\'b"],
      ],
      'escapes are left as written',
    )
    assert.deepEqual(readFlatDictRepr('{}'), [])
    assert.deepEqual(readFlatDictRepr("  {'a': 1,}  "), [['a', '1']])
  })

  it('anything else is null: nested values, lists, a bare word, not a string', () => {
    for (const text of ["{'a': [1, 2]}", "{'a': {'b': 1}}", '[1, 2]', "{'a' 1}", "{'a': 1 'b': 2}", '{ }', 'None', "{'a': x}"])
      assert.equal(readFlatDictRepr(text), null, text)
    for (const value of [null, undefined, 42, { a: 1 }]) assert.equal(readFlatDictRepr(value), null)
  })

  it('reads back what kwargsRepr wrote, for flat dicts of plain words and numbers', () => {
    const word = fc.stringMatching(/^[a-z][a-z0-9_ ]{0,10}$/)
    fc.assert(
      fc.property(fc.dictionary(word, fc.oneof(word, fc.integer(), fc.boolean(), fc.constant(null)), { maxKeys: 6 }), (kwargs) => {
        const items = readFlatDictRepr(kwargsRepr(kwargs))
        const written = Object.entries(kwargs).map(([k, v]) => [
          k,
          v === null ? 'None' : v === true ? 'True' : v === false ? 'False' : String(v),
        ])
        assert.deepEqual(items, written)
      }),
      { seed: 51, numRuns: 200 },
    )
  })

  it('never throws, whatever the text; a long unclosed item is refused in one pass', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (text) => void readFlatDictRepr(`{${text}}`)),
      { seed: 51, numRuns: 500 },
    )
    assert.equal(readFlatDictRepr(`{'a': ${'1'.repeat(500_000)}x}`), null)
    assert.equal(readFlatDictRepr(`{'${'\\x'.repeat(250_000)}`), null)
    assert.equal(readFlatDictRepr(`{${Array(50_000).fill("'k': 1").join(', ')}}`)?.length, 50_000)
  })
})
