import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  EncodeError,
  PyFloat,
  PyTuple,
  comparePyStr,
  dumps,
  loads,
  pyRepr,
  saferepr,
  argsRepr,
  kwargsRepr,
} from '../../../src/protocol/index.js'
import { loadFixture, revive } from './fixtures.js'

interface Case {
  input: unknown
  repr: string
  saferepr: string
  saferepr30: string
  saferepr_nolimit: string
  kombu_json?: string
}
const { cases } = loadFixture<{ cases: Case[] }>('repr-and-json.json')

describe('spec §1.3/§1.5: repr, saferepr and kombu JSON against Celery 5.2.6 outputs', () => {
  for (const c of cases) {
    const label = JSON.stringify(c.input).slice(0, 60)
    it(`pyRepr ${label}`, () => assert.equal(pyRepr(revive(c.input)), c.repr))
    it(`saferepr ${label}`, () => {
      const v = revive(c.input)
      assert.equal(saferepr(v, 1024), c.saferepr)
      assert.equal(saferepr(v, 30), c.saferepr30)
      assert.equal(saferepr(v, null), c.saferepr_nolimit)
    })
    if (c.kombu_json !== undefined) {
      const expected = c.kombu_json
      it(`dumps ${label}`, () => assert.equal(dumps(revive(c.input)), expected))
    }
  }
})

describe('kombu JSON', () => {
  it('dumps keeps insertion order and skips undefined members', () => {
    assert.equal(dumps({ b: 1, a: undefined, c: [undefined] }), '{"b": 1, "c": [null]}')
  })
  it('dumps writes Dates as isoformat with Z and 6-digit fractions', () => {
    assert.equal(dumps(new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 123))), '"2024-01-02T03:04:05.123000Z"')
    assert.equal(dumps(new Date(Date.UTC(2024, 0, 2, 3, 4, 5))), '"2024-01-02T03:04:05Z"')
  })
  it("dumps refuses bytes, functions and cycles with kombu's EncodeError, its cause as Python names it", () => {
    assert.throws(
      () => dumps(new Uint8Array([1])),
      (e: EncodeError) => e instanceof EncodeError && e.reason === "TypeError('Object of type bytes is not JSON serializable')",
    )
    assert.throws(
      () => dumps({ f: () => 1 }),
      (e: EncodeError) => e.reason === "TypeError('Object of type function is not JSON serializable')",
    )
    const a: unknown[] = []
    a.push(a)
    assert.throws(
      () => dumps(a),
      (e: EncodeError) => e.name === 'EncodeError' && e.reason === "ValueError('Circular reference detected')",
    )
  })
  it('loads accepts the bare NaN/Infinity tokens but not inside strings', () => {
    const v = loads('[NaN, Infinity, -Infinity, "NaN", {"x": -1.5e3}]') as unknown[]
    assert.ok(Number.isNaN(v[0]))
    assert.deepEqual(v.slice(1), [Infinity, -Infinity, 'NaN', { x: -1500 }])
  })
  it('loads with integers: exact keeps an int a double would change as a BigInt, and dumps writes it back digit for digit', () => {
    const text =
      '[18446744073709551617, -10000000000000000000007, 9007199254740993, 9007199254740991, 18446744073709551616, 1.5, "12345678901234567890"]'
    const v = loads(text, { integers: 'exact' }) as unknown[]
    // 2**64 itself is a double exactly, as any integer a JS sender wrote from a number is: it stays a number.
    assert.deepEqual(v, [
      18446744073709551617n,
      -10000000000000000000007n,
      9007199254740993n,
      9007199254740991,
      18446744073709551616,
      1.5,
      '12345678901234567890',
    ])
    assert.equal(dumps(v), text)
    assert.equal((loads(text) as unknown[])[0], 18446744073709552000, 'by default a number, rounded, as JSON.parse gives')
  })
  it('loads rejects invalid JSON with a SyntaxError', () => {
    for (const bad of ['', '[1,', '{"a" 1}', 'nan', '[1] x', '"\\x"', "{'a': 1}"]) {
      assert.throws(() => loads(bad), SyntaxError, bad)
    }
  })
  it('loads keeps integral floats as PyFloat when asked, and round-trips them', () => {
    const text = '[2.0, 2, 0.5, 1e+16, {"__proto__": 1}]'
    const v = loads(text, { floats: 'pyfloat' }) as unknown[]
    assert.ok(v[0] instanceof PyFloat)
    assert.equal(v[1], 2)
    assert.equal(dumps(v), text)
    assert.equal(Object.getPrototypeOf(v[4]), Object.prototype)
  })
  it('dumps writes the same keys the same way on every call, escaped as Python does, and integers past 2**53 digit for digit', () => {
    // Python: json.dumps({'a"b': 1, '\u00e9': -0.0 + 0, 'n': 2**53, 'big': 10**21, 'neg': -(2**53) - 2})
    const value = () => ({ 'a"b': 1, é: -0, n: 2 ** 53, big: 1e21, neg: -(2 ** 53) - 2 })
    const expected = '{"a\\"b": 1, "\\u00e9": 0, "n": 9007199254740992, "big": 1000000000000000000000, "neg": -9007199254740994}'
    assert.equal(dumps(value()), expected)
    assert.equal(dumps(value()), expected)
    // Many distinct keys (a dict argument's) are written right past the prefix cache's bound too.
    const wide = Object.fromEntries(Array.from({ length: 700 }, (_, i) => [`k${i}`, i]))
    assert.equal(dumps(wide), `{${Array.from({ length: 700 }, (_, i) => `"k${i}": ${i}`).join(', ')}}`)
  })
  it('dumps → loads round-trips nested values', () => {
    const value = { s: 'é\u2028"\\\n', n: [1, -2.5, 0, true, false, null], o: { deep: { list: [{}] } } }
    assert.deepEqual(loads(dumps(value)), value)
  })
})

describe('argsrepr / kwargsrepr', () => {
  it('args are a tuple: [2, 3] → (2, 3); one arg keeps the comma', () => {
    assert.equal(argsRepr([2, 3]), '(2, 3)')
    assert.equal(argsRepr(['a']), "('a',)")
    assert.equal(argsRepr([]), '()')
  })
  it('kwargsrepr is a dict repr with saferepr quoting', () => {
    assert.equal(kwargsRepr({}), '{}')
    assert.equal(kwargsRepr({ name: "it's", n: new PyFloat(1) }), "{'name': 'it\\'s', 'n': 1.0}")
  })
  it('pyRepr of a one-tuple and nested tuple', () => {
    assert.equal(pyRepr(new PyTuple([new PyTuple([1])])), '((1,),)')
  })
})

describe('comparePyStr', () => {
  it("sorts as Python's sorted() does: by code point, astral characters after U+FFFF", () => {
    // The expected list is what python3 printed for sorted() of the same strings.
    const expected = [
      '',
      'W1@host',
      'a',
      'ab',
      'a\uffff',
      'a\u{1F600}',
      'b',
      'w10@host',
      'w2@host',
      '\u00e9',
      '\ue000',
      '\uffff',
      '\u{1F600}',
    ]
    const shuffled = [
      'w2@host',
      'w10@host',
      'W1@host',
      'b',
      '\u00e9',
      '\uffff',
      '\u{1F600}',
      'ab',
      'a',
      '',
      'a\uffff',
      'a\u{1F600}',
      '\ue000',
    ]
    assert.deepEqual([...shuffled].sort(comparePyStr), expected)
    // Plain code-unit order gets the astral ones wrong: the case the shift is for.
    assert.notDeepEqual([...shuffled].sort(), expected)
  })
  it('is 0 only for equal strings', () => {
    assert.equal(comparePyStr('w1@h', 'w1@h'), 0)
    assert.ok(comparePyStr('w1@h', 'w1@h2') < 0)
    assert.ok(comparePyStr('w1@h2', 'w1@h') > 0)
  })
})
