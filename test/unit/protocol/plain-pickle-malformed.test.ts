// Malformed pickles the decoder fuzzing found: each is refused with
// PickleValueRefusedError (one line) instead of a TypeError, RangeError or a
// value that is not plain, and a long APPENDS run still reads.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  MAX_PICKLE_BYTES,
  MAX_PICKLE_INT_BYTES,
  MAX_PICKLE_INT_DIGITS,
  PickleValueRefusedError,
  PyTuple,
  loadsPickle,
} from '../../../src/protocol/index.js'

const refused = (bytes: Buffer, message: RegExp): void => {
  assert.throws(
    () => loadsPickle(bytes),
    (e: unknown) => e instanceof PickleValueRefusedError && message.test(e.message) && !e.message.includes('\n'),
  )
}

describe('malformed pickles', () => {
  it('a BINUNICODE that is not UTF-8 is refused, not a TypeError', () => {
    refused(Buffer.from([0x80, 4, 0x8c, 2, 0xff, 0xfe, 0x2e]), /not UTF-8/)
  })

  it('a protocol-0 \\U escape past U+10FFFF is refused, not a RangeError', () => {
    refused(Buffer.from('V\\Uffffffff\n.', 'latin1'), /past U\+10FFFF/)
  })

  it('DUP, MEMOIZE, PUT and SETITEM on an empty stack are an underflow, not undefined', () => {
    refused(Buffer.from([0x32, 0x2e]), /stack underflow/)
    refused(Buffer.from([0x94, 0x68, 0, 0x2e]), /stack underflow/)
    refused(Buffer.from([0x71, 0, 0x68, 0, 0x2e]), /stack underflow/)
  })

  it("SETITEM on a tuple is refused (it would overwrite the tuple's items)", () => {
    refused(Buffer.from([0x29, 0x8c, 5, ...Buffer.from('items'), 0x4b, 1, 0x73, 0x2e]), /SETITEMS on a non-dict/)
  })

  it("a dict key __proto__ is a key, not the dict's prototype", () => {
    const v = loadsPickle(Buffer.from([0x7d, 0x8c, 9, ...Buffer.from('__proto__'), 0x5d, 0x73, 0x2e])) as Record<string, unknown>
    assert.equal(Object.getPrototypeOf(v), Object.prototype)
    assert.deepEqual(Object.getOwnPropertyDescriptor(v, '__proto__')?.value, [])
    assert.equal(JSON.stringify(v), '{"__proto__":[]}')
  })

  it('APPENDS of 150,000 items reads (no spread into push)', () => {
    const v = loadsPickle(Buffer.concat([Buffer.from([0x5d, 0x28]), Buffer.alloc(150_000, 0x4e), Buffer.from([0x65, 0x2e])])) as unknown[]
    assert.equal(v.length, 150_000)
  })

  it("ints: protocol-0 past Python's 4300 digits refused, LONG4 past its byte limit refused before it is read", () => {
    refused(Buffer.from(`L${'7'.repeat(MAX_PICKLE_INT_DIGITS + 1)}L\n.`, 'latin1'), /more than 4300 digits/)
    refused(Buffer.from(`I${'7'.repeat(MAX_PICKLE_INT_DIGITS + 1)}\n.`, 'latin1'), /more than 4300 digits/)
    assert.equal(loadsPickle(Buffer.from(`L${'7'.repeat(MAX_PICKLE_INT_DIGITS)}L\n.`, 'latin1')), BigInt('7'.repeat(MAX_PICKLE_INT_DIGITS)))
    const head = Buffer.alloc(5)
    head[0] = 0x8b
    head.writeUInt32LE(MAX_PICKLE_INT_BYTES + 1, 1)
    refused(Buffer.concat([head, Buffer.alloc(MAX_PICKLE_INT_BYTES + 1, 0x11), Buffer.from([0x2e])]), /int of more than/)
  })

  it('a pickle longer than MAX_PICKLE_BYTES is refused before it is read', () => {
    const big = new Uint8Array(new ArrayBuffer(MAX_PICKLE_BYTES + 1), 0)
    refused(Buffer.from(big.buffer), /over the limit/)
    assert.ok(loadsPickle(Buffer.from([0x29, 0x2e])) instanceof PyTuple)
  })
})
