import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  PickleValueRefusedError,
  PyFloat,
  PyTuple,
  dumpsGroupPickle,
  dumpsPickle,
  loadsGroupPickle,
  loadsPickle,
} from '../../../src/protocol/index.js'

// pickle.dumps({...}, protocol=5) from Python 3.11 (what SQLAlchemy's PickleType writes for Celery 5.2.6).
const PY_PICKLE =
  '8005959d000000000000007d94288c0373756d944b058c057061727473945d94284b024b03658c03626967948a090000000000000000408c036e6567948a090000000000000000c08c0166944740000000000000008c017894473ff80000000000008c017494284b018c0161944e888974948c016294430200ff948c0175948c09c3a9e282acf09f9880948c016e944affffffff8c016d944a701101008c016b944ad4feffff752e'

// pickle.dumps of an object whose __reduce__ is (os.system, ('touch /tmp/x',)), protocol 5 and protocol 0.
const REDUCE_P5 = '80059527000000000000008c05706f736978948c0673797374656d9493948c0c746f756368202f746d702f7894859452942e'
const REDUCE_P0 = Buffer.from('cposix\nsystem\np0\n(Vtouch /tmp/x\np1\ntp2\nRp3\n.', 'latin1').toString('hex')

describe('plain pickle subset', () => {
  it('reads what Python writes: big ints, floats, tuples, bytes, unicode', () => {
    const v = loadsPickle(Buffer.from(PY_PICKLE, 'hex')) as Record<string, unknown>
    assert.equal(v.sum, 5)
    assert.deepEqual(v.parts, [2, 3])
    assert.equal(v.big, 2n ** 70n)
    assert.equal(v.neg, -(2n ** 70n))
    assert.ok(v.f instanceof PyFloat && v.f.value === 2)
    assert.equal(v.x, 1.5)
    assert.ok(v.t instanceof PyTuple)
    assert.deepEqual((v.t as PyTuple).items, [1, 'a', null, true, false])
    assert.deepEqual(v.b, Buffer.from([0, 0xff]))
    assert.equal(v.u, 'é€😀')
    assert.equal(v.n, -1)
    assert.equal(v.m, 70000)
    assert.equal(v.k, -300)
  })

  it('round-trips its own output', () => {
    const value = {
      a: [1, 'x', null, true, new PyTuple([2n ** 80n, -5, 1.25])],
      b: Buffer.from('hi'),
      c: {},
      d: [],
      e: 'x'.repeat(300),
      f: new PyFloat(3),
    }
    const back = loadsPickle(dumpsPickle(value)) as Record<string, unknown>
    assert.deepEqual((back.a as unknown[]).slice(0, 4), [1, 'x', null, true])
    assert.deepEqual(((back.a as unknown[])[4] as PyTuple).items, [2n ** 80n, -5, 1.25])
    assert.equal(back.e, 'x'.repeat(300))
    assert.equal((back.f as PyFloat).value, 3)
  })

  it('refuses a __reduce__ payload in one line, protocols 5 and 0', () => {
    for (const hex of [REDUCE_P5, REDUCE_P0]) {
      assert.throws(
        () => loadsPickle(Buffer.from(hex, 'hex')),
        (e: Error) =>
          e instanceof PickleValueRefusedError &&
          /refusing a pickle that holds (STACK_)?GLOBAL/.test(e.message) &&
          !e.message.includes('\n'),
      )
    }
  })

  it('refuses sets, truncated data and unknown opcodes', () => {
    assert.throws(() => loadsPickle(Buffer.from('80058f942e', 'hex')), PickleValueRefusedError)
    assert.throws(() => loadsPickle(Buffer.from('80057d94288c', 'hex')), PickleValueRefusedError)
    assert.throws(() => loadsPickle(Buffer.from('8005ff2e', 'hex')), PickleValueRefusedError)
  })

  it('refuses to write what is not a plain value', () => {
    assert.throws(() => dumpsPickle({ d: new Date() }), PickleValueRefusedError)
  })

  it('group pickles: reads only the GroupResult shape', () => {
    const back = loadsGroupPickle(dumpsGroupPickle('g1', ['t1', 't2']))
    assert.deepEqual(back, { groupId: 'g1', taskIds: ['t1', 't2'] })
    assert.throws(() => loadsGroupPickle(Buffer.from(REDUCE_P5, 'hex')), PickleValueRefusedError)
  })
})
