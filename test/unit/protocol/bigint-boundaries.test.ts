// Integers at every width edge and past 2**53 (to 10**40), against the bytes
// Python writes for them (test/fixtures/python-bigints.json): pickle (the SQL
// result column), msgpack and YAML, both ways, exact; and what msgpack cannot
// hold (past 64 bits) refused as Python's packb refuses it, never wrapped.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { EncodeError, deserialize, dumps, loads, serialize } from '../../../src/protocol/index.js'
import { loadsPickle } from '../../../src/protocol/codecs/plain-pickle.js'
import { dumpsPickle } from '../../../src/protocol/codecs/plain-pickle-writer.js'

const fixture = JSON.parse(readFileSync(new URL('../../fixtures/python-bigints.json', import.meta.url), 'utf8')) as {
  values: string[]
  pickle: Record<string, string>
  msgpack: Record<string, string>
  yaml: string
  long4: Record<string, string>
}
/** The JS shape tsq reads an int as: a number while it is safe, else a BigInt. */
const jsInt = (s: string): number | bigint => (Number.isSafeInteger(Number(s)) ? Number(s) : BigInt(s))
const exact = (v: unknown): string => (typeof v === 'number' && !Number.isInteger(v) ? `float ${v}` : BigInt(v as number).toString())

describe('big integers, byte for byte with Python', () => {
  it("pickle: Python's bytes read exact; tsq writes the bytes Python writes, for a BigInt and for an integral number alike", () => {
    for (const s of fixture.values) {
      const hex = fixture.pickle[s]!
      assert.equal(exact(loadsPickle(Buffer.from(hex, 'hex'))), s, s)
      assert.equal(dumpsPickle(BigInt(s)).toString('hex'), hex, s)
      const n = Number(s)
      // A number that holds the int exactly (2**70 does) is the int: kombu's JSON writes it so.
      if (BigInt(n) === BigInt(s)) assert.equal(dumpsPickle(n).toString('hex'), hex, `${s} as a number`)
    }
  })

  it("pickle LONG4 (an int past 255 bytes): Python's bytes read exact, and tsq writes them", () => {
    for (const [s, hex] of Object.entries(fixture.long4)) {
      assert.equal(exact(loadsPickle(Buffer.from(hex, 'hex'))), s)
      assert.equal(dumpsPickle(BigInt(s)).toString('hex'), hex)
    }
  })

  it("msgpack: Python's bytes read exact, tsq writes Python's bytes, and past 64 bits both refuse", () => {
    for (const s of fixture.values) {
      const hex = fixture.msgpack[s]
      if (hex === undefined) {
        assert.throws(
          () => serialize('msgpack', BigInt(s)),
          (e: Error) =>
            e instanceof EncodeError &&
            e.message === 'Integer value out of range' &&
            (e as EncodeError).reason === "OverflowError('Integer value out of range')",
          s,
        )
        continue
      }
      assert.equal(exact(deserialize(Buffer.from(hex, 'hex'), 'application/x-msgpack', 'binary', null)), s, s)
      assert.equal(serialize('msgpack', BigInt(s)).body.toString('hex'), hex, s)
      assert.deepEqual(deserialize(serialize('msgpack', jsInt(s)).body, 'application/x-msgpack', 'binary', null), jsInt(s), s)
    }
    // 2**64 as a number is past uint64 too: refused, not written as a float or wrapped to 0.
    assert.throws(() => serialize('msgpack', [2 ** 64]), EncodeError)
  })

  it("YAML: PyYAML's safe_dump reads exact, and tsq's text is PyYAML's", () => {
    const read = deserialize(fixture.yaml, 'application/x-yaml', 'utf-8', null) as unknown[]
    assert.deepEqual(read.map(exact), fixture.values)
    assert.equal(serialize('yaml', fixture.values.map(jsInt)).body.toString('utf8'), fixture.yaml)
    // An integral number past 2**53 is written as an int, not `1.1805916207174113e+21` (a float to PyYAML).
    assert.equal(serialize('yaml', [2 ** 70]).body.toString('utf8'), '- 1180591620717411303424\n')
  })

  it('kombu JSON: every value written digit for digit and read back exact', () => {
    const text = `[${fixture.values.join(', ')}]`
    assert.equal(dumps(fixture.values.map(jsInt)), text)
    assert.deepEqual((loads(text, { integers: 'exact' }) as unknown[]).map(exact), fixture.values)
    assert.equal(dumps([2 ** 70]), '[1180591620717411303424]')
  })
})
