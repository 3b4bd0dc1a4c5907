import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { workersDot, poolsFromStats } from '../../../src/cli/render/graphs.js'
import { bootOrder, WORKER_BOOTSTEPS, type Bootstep } from '../../../src/worker/bootsteps.js'

describe('tsq graph', () => {
  it('workers: byte for byte what `celery graph workers nodes:w1,w2,w3,w4,w5 threads:5,1,2,3,4 backend:...` printed (abbreviations included)', () => {
    const expected = readFileSync(new URL('../../fixtures/graph/celery-workers.dot', import.meta.url), 'utf8')
    const workers = ['w1', 'w2', 'w3', 'w4', 'w5'].map((node, i) => ({ node, size: [5, 1, 2, 3, 4][i]! }))
    assert.equal(workersDot({ broker: 'redis://127.0.0.1:6379/12', backend: 'redis://127.0.0.1:6379/1', workers }), expected)
  })

  it('workers: pool sizes from inspect stats replies', () => {
    assert.deepEqual(poolsFromStats([{ 'a@h': { pool: { 'max-concurrency': 4 } } }, { 'b@h': { pool: {} } }]), [
      { node: 'a@h', size: 4 },
      { node: 'b@h', size: 0 },
    ])
  })

  it('bootsteps: the declared order already satisfies every dependency, and a cycle is refused', () => {
    assert.deepEqual(
      bootOrder().map((s) => s.name),
      WORKER_BOOTSTEPS.map((s) => s.name),
    )
    const cyclic: Bootstep[] = [
      { name: 'Pool', requires: ['Tasks'], description: '' },
      { name: 'Tasks', requires: ['Pool'], description: '' },
    ]
    assert.throws(() => bootOrder(cyclic), /bootstep cycle: Pool → Tasks → Pool/)
  })
})
