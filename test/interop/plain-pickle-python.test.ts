// Python's pickle reads what tsq's plain pickle writes: plain values (big ints,
// tuples, floats, bytes, unicode) and a GroupResult (the unit tests,
// test/unit/protocol/plain-pickle.test.ts, check the reading side on Python's bytes).
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { describe, it } from 'node:test'
import { PyFloat, PyTuple, dumpsGroupPickle, dumpsPickle } from '../../src/protocol/index.js'

const python = spawnSync('/usr/bin/python3', ['-c', 'print(1)']).status === 0

describe('plain pickle subset, read by Python', () => {
  it('Python reads what tsq writes', { skip: python ? false : 'no /usr/bin/python3' }, () => {
    const value = {
      sum: 5,
      parts: [2, 3],
      big: 2n ** 70n,
      t: new PyTuple(['boom', 3]),
      f: new PyFloat(2),
      b: Buffer.from([1, 2]),
      u: 'é€😀',
    }
    const out = spawnSync(
      '/usr/bin/python3',
      ['-c', 'import pickle,sys; print(repr(pickle.loads(bytes.fromhex(sys.argv[1]))))', dumpsPickle(value).toString('hex')],
      { encoding: 'utf8' },
    )
    assert.equal(
      out.stdout.trim(),
      "{'sum': 5, 'parts': [2, 3], 'big': 1180591620717411303424, 't': ('boom', 3), 'f': 2.0, 'b': b'\\x01\\x02', 'u': 'é€😀'}",
    )
    const group = spawnSync(
      '/usr/bin/python3',
      [
        '-c',
        'import pickle,sys; g = pickle.loads(bytes.fromhex(sys.argv[1])); print(type(g).__name__, g.id, [r.id for r in g.results])',
        dumpsGroupPickle('g1', ['t1', 't2']).toString('hex'),
      ],
      { encoding: 'utf8' },
    )
    assert.equal(group.stdout.trim(), "GroupResult g1 ['t1', 't2']", group.stderr)
  })
})
