// The pickle reader's limits on what a value expands to: shared references
// (the memo) counted each time they are used, a value that contains itself,
// and nesting, all refused before the value leaves the reader; sharing within
// the limits still reads.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { MAX_PICKLE_DEPTH, MAX_PICKLE_VALUES, PickleValueRefusedError, loadsPickle } from '../../../src/protocol/index.js'

/**
 * What Python 3 writes for `x = []; for _ in range(levels): x = [x, x]` with
 * pickle.dumps(x, protocol=5): each list once, then BINGETs of the memo. At
 * 25 levels it is 164 bytes and 2^26 - 1 values written out.
 */
function sharedBomb(levels: number): Buffer {
  const body: number[] = []
  for (let i = 0; i < levels; i++) body.push(0x5d, 0x94, 0x28) // EMPTY_LIST MEMOIZE MARK
  body.push(0x5d, 0x94)
  for (let k = levels; k >= 1; k--) body.push(0x68, k, 0x65) // BINGET k, APPENDS
  body.push(0x2e)
  const head = Buffer.alloc(11)
  head.set([0x80, 5, 0x95])
  head.writeBigUInt64LE(BigInt(body.length), 3)
  return Buffer.concat([head, Buffer.from(body)])
}

// The probe's bytes, as Python 3.11 wrote them (see sharedBomb).
const PROBE_25 =
  '80059599000000000000005d94285d94285d94285d94285d94285d94285d94285d94285d94285d94285d94285d94285d94285d94285d94285d94285d94285d94285d94285d94285d94285d94285d94285d94285d94285d94681965681865681765681665681565681465681365681265681165681065680f65680e65680d65680c65680b65680a656809656808656807656806656805656804656803656802656801652e'

describe('plain pickle limits', () => {
  it("the builder writes the probe's 164 bytes", () => {
    assert.equal(sharedBomb(25).toString('hex'), PROBE_25)
  })

  it('refuses the 25-level reference bomb with one line, without expanding it', () => {
    assert.throws(
      () => loadsPickle(Buffer.from(PROBE_25, 'hex')),
      (e: unknown) =>
        e instanceof PickleValueRefusedError && /expands to more than 1000000 values/.test(e.message) && !e.message.includes('\n'),
    )
  })

  it('counts shared references in full: 19 levels (2^20 - 1 values) refused, 18 levels (2^19 - 1) read', () => {
    assert.ok(2 ** 20 - 1 > MAX_PICKLE_VALUES && 2 ** 19 - 1 <= MAX_PICKLE_VALUES)
    assert.throws(() => loadsPickle(sharedBomb(19)), PickleValueRefusedError)
    const v = loadsPickle(sharedBomb(18)) as unknown[]
    assert.equal(v.length, 2)
    assert.equal(v[0], v[1])
  })

  it('refuses a list that contains itself', () => {
    // l = []; l.append(l); pickle.dumps(l, protocol=5)
    assert.throws(() => loadsPickle(Buffer.from('80059506000000000000005d946800612e', 'hex')), /contains itself/)
  })

  it('refuses nesting past the limit and reads it up to the limit', () => {
    const nested = (levels: number): Buffer =>
      Buffer.concat([
        Buffer.from([0x80, 2]),
        Buffer.alloc(levels, 0x5d),
        Buffer.from(Array.from({ length: levels - 1 }, () => 0x61)),
        Buffer.from([0x2e]),
      ])
    assert.throws(() => loadsPickle(nested(MAX_PICKLE_DEPTH + 1)), /nests deeper than 200 levels/)
    assert.throws(() => loadsPickle(nested(20_000)), /nests deeper/)
    let v = loadsPickle(nested(MAX_PICKLE_DEPTH)) as unknown[]
    let depth = 1
    while (v.length) {
      v = v[0] as unknown[]
      depth++
    }
    assert.equal(depth, MAX_PICKLE_DEPTH)
  })

  it("reads a LONG4 of 100 kB (two's complement) exactly", () => {
    const n = 100_000
    const bytes = Buffer.alloc(n, 0xff)
    const data = Buffer.concat([Buffer.from([0x80, 2, 0x8b]), Buffer.alloc(4), bytes, Buffer.from([0x2e])])
    data.writeInt32LE(n, 3)
    assert.equal(loadsPickle(data), -1)
    bytes[n - 1] = 0x7f
    const big = loadsPickle(Buffer.concat([data.subarray(0, 7), bytes, Buffer.from([0x2e])])) as bigint
    assert.equal(big, (1n << BigInt(8 * n - 1)) - 1n)
  })
})
