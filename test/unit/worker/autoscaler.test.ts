// The autoscaler's decisions (Celery's worker/autoscale.py _maybe_scale) on a
// pool that only counts: grow to min(qty, max), shrink to max(qty, min) after
// the keepalive, range changes validated.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { Autoscaler } from '../../../src/worker/autoscaler.js'
import type { Pool } from '../../../src/worker/pools/pool.js'

function countingPool(size: number): Pool {
  const pool = {
    kind: 'prefork' as const,
    size,
    start: async () => undefined,
    run: async () => ({ status: 'success' as const, value: null, runtime: 0 }),
    afterStored: () => undefined,
    terminate: () => false,
    abort: () => undefined,
    grow: async (n: number) => void (pool.size += n),
    shrink: async (n: number) => void (pool.size = Math.max(1, pool.size - n)),
    slots: () => [],
    close: async () => undefined,
  }
  return pool
}

it('[autoscale] grows to min(qty, max) at once and shrinks to max(qty, min) only after the keepalive', async (t) => {
  // The keepalive is read on Date.now(): a mocked clock passes it without waiting.
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 })
  const pool = countingPool(2)
  let qty = 0
  const a = new Autoscaler({ max: 6, min: 2, pool, qty: () => qty, log: () => undefined, onRangeChange: () => undefined, keepaliveS: 0.05 })
  qty = 10
  assert.equal(await a.maybeScale(), true)
  assert.equal(pool.size, 6)
  qty = 0
  assert.equal(await a.maybeScale(), false, 'kept within the keepalive')
  t.mock.timers.tick(80)
  assert.equal(await a.maybeScale(), true)
  assert.equal(pool.size, 2)
  qty = 3
  await a.maybeScale()
  assert.equal(pool.size, 3)
})

it('[control autoscale] a new range applies; an inverted one is refused', () => {
  let changes = 0
  const a = new Autoscaler({
    max: 4,
    min: 1,
    pool: countingPool(1),
    qty: () => 0,
    log: () => undefined,
    onRangeChange: () => void changes++,
  })
  a.set(8, 2)
  assert.deepEqual([a.max, a.min, changes], [8, 2, 1])
  assert.throws(() => a.set(2, 3), RangeError)
  assert.deepEqual(a.info(), { max: 8, min: 2, current: 1, qty: 0 })
})
