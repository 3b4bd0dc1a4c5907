// The workers page's Pool column: the dashboard names a worker's pool from its
// `inspect stats` as Celery 5.2.6 answers it (no `implementation` key: each pool
// is told by its own keys) and as Celery 5.3 does (`implementation`), and a tsq
// worker's stats carry, for each of its pools, the keys Python's same pool
// replies with, so the column reads the same for both.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { poolKind } from '../../../src/dashboard/views.js'
import { controlHandlers, type ControlTarget } from '../../../src/worker/control/control-handlers.js'

/** `celery inspect stats -j`'s pool from Python Celery 5.2.6 workers (-P prefork -c 2, -P solo, -P threads -c 3). */
const CELERY_526 = {
  prefork: {
    'max-concurrency': 2,
    processes: [13682, 13708],
    'max-tasks-per-child': 'N/A',
    'put-guarded-by-semaphore': false,
    timeouts: [0, 0],
    writes: { total: 0, avg: '0.00', all: '', raw: '', strategy: 'fair', inqueues: { total: 2, active: 0 } },
  },
  solo: { 'max-concurrency': 1, processes: [21591], 'max-tasks-per-child': null, 'put-guarded-by-semaphore': true, timeouts: [] },
  threads: { 'max-concurrency': 3, threads: 0 },
}

function tsqStats(kind: 'prefork' | 'threads' | 'solo'): Record<string, unknown> {
  const target = {
    hostname: 'tsq@h',
    clock: { value: 7 },
    startedAt: Date.now(),
    pool: { kind, size: 2, slots: () => [{ index: 1, pid: 4242, taskId: null, since: 0 }] },
    runner: { processed: 3, active: new Map(), total: { 'proj.add': 3 } },
    prefetchCount: () => 8,
    brokerInfo: () => ({ transport: 'amqp' }),
  } as unknown as ControlTarget
  const stats = controlHandlers(target)('stats')!
  return stats({}, {} as never) as Record<string, unknown>
}

describe("the dashboard's Pool column", () => {
  it("names each pool from Celery 5.2.6's stats, which carry no implementation", () => {
    for (const [kind, pool] of Object.entries(CELERY_526)) assert.equal(poolKind(pool), kind)
  })

  it("names it from Celery 5.3's implementation, thread as the -P name threads", () => {
    assert.equal(poolKind({ implementation: 'celery.concurrency.prefork:TaskPool', 'max-concurrency': 4 }), 'prefork')
    assert.equal(poolKind({ implementation: 'celery.concurrency.thread:TaskPool' }), 'threads')
    assert.equal(poolKind({ implementation: 'celery.concurrency.eventlet:TaskPool' }), 'eventlet')
  })

  it('leaves it empty where the stats do not tell (a gevent pool in 5.2.6 gives its size alone)', () => {
    assert.equal(poolKind({ 'max-concurrency': 4 }), null)
    assert.equal(poolKind({}), null)
  })

  for (const kind of ['prefork', 'threads', 'solo'] as const) {
    it(`a tsq ${kind} worker's stats have the keys of Python's ${kind} pool, and read as ${kind}`, () => {
      const pool = tsqStats(kind).pool as Record<string, unknown>
      assert.deepEqual(Object.keys(pool).sort(), Object.keys(CELERY_526[kind]).sort())
      assert.equal(poolKind(pool), kind)
    })
  }
})
