// Integers at every width edge and past 2**53 through the stores tsq keeps
// itself: the embedded file:// result store, and the value a Redis key or an
// rpc reply holds in each result_serializer (json, msgpack, yaml). Each comes
// back exact; the interop tests check the same values against Python.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { FileResultBackend } from '../../../src/backends/file-backend.js'
import { decodeStoredResult, encodeStoredResult } from '../../../src/backends/result-codec.js'
import { acceptContent, encodeResultMeta } from '../../../src/protocol/index.js'

const INTS = [
  0n,
  1n,
  -1n,
  127n,
  256n,
  2n ** 15n,
  2n ** 16n,
  2n ** 31n - 1n,
  2n ** 31n,
  2n ** 32n,
  2n ** 53n - 1n,
  2n ** 53n,
  2n ** 53n + 1n,
  2n ** 63n - 1n,
  2n ** 63n,
  2n ** 64n - 1n,
  2n ** 64n,
  -(2n ** 63n),
  -(2n ** 63n) - 1n,
  2n ** 70n,
  18446744073709551617n,
  10n ** 40n,
  -(2n ** 70n),
  -(10n ** 40n),
]
const js = (v: bigint): number | bigint => (v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v)
/** Digits of what was read; a non-integer (a float) shows as one. */
const digits = (value: unknown): string[] =>
  (value as unknown[]).map((v) =>
    typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v)) ? BigInt(v as number).toString() : `float ${String(v)}`,
  )
const meta = (values: unknown[]) => encodeResultMeta({ taskId: 't1', status: 'SUCCESS', result: values })

describe('big integers in the result stores', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-bigints-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('file:// keeps every one exact, and ints past 2**53 read back as BigInts', async () => {
    const backend = new FileResultBackend(dir)
    await backend.store('t1', meta(INTS.map(js)), 'SUCCESS')
    const got = (await backend.get('t1'))!.result as unknown[]
    assert.deepEqual(digits(got), INTS.map(String))
    assert.equal(got[12], 2n ** 53n + 1n)
  })

  for (const serializer of ['json', 'msgpack', 'yaml'] as const) {
    it(`a Redis value / rpc reply in ${serializer} keeps every one exact`, () => {
      const values = serializer === 'msgpack' ? INTS.filter((v) => v >= -(2n ** 63n) && v < 2n ** 64n) : INTS
      const codec = { serializer, accept: acceptContent([serializer]) }
      const stored = encodeStoredResult(meta(values.map(js)), codec)
      assert.deepEqual(digits(decodeStoredResult(stored.body, codec, stored.contentType).result), values.map(String))
    })
  }

  it("msgpack refuses an int past 64 bits, as Python's packb does, rather than wrapping it", () => {
    const codec = { serializer: 'msgpack', accept: acceptContent(['msgpack']) }
    assert.throws(() => encodeStoredResult(meta([2n ** 70n]), codec), /Integer value out of range/)
  })
})
