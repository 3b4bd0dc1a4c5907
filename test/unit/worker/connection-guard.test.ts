// The connection guard's decisions, on a transport that only counts: the
// watchdog re-creates a consumer that got nothing while it had room and its
// queue had messages; the prefetch window shrinks after a reconnect and grows
// back one slot per finished task.
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { it } from 'node:test'
import type { Transport } from '../../../src/transport/index.js'
import { ConnectionGuard, type ConnectionGuardOptions } from '../../../src/worker/connection-guard.js'
import { Logger } from '../../../src/process/logger.js'
import type { Request } from '../../../src/worker/task-path/request.js'

function fakeTransport(ready: () => number): Transport {
  const events = new EventEmitter()
  const t = {
    displayUrl: 'fake://',
    on: (e: string, l: (...a: unknown[]) => void) => (events.on(e, l), t),
    off: (e: string, l: (...a: unknown[]) => void) => (events.off(e, l), t),
    emit: (e: string, ...a: unknown[]) => events.emit(e, ...a),
    declareQueue: async () => ({ messageCount: ready() }),
  }
  return t as unknown as Transport
}

function guard(over: Partial<ConnectionGuardOptions>): ConnectionGuard {
  return new ConnectionGuard({
    transport: fakeTransport(() => 0),
    log: new Logger('CRITICAL'),
    cancelLongRunningOnLoss: false,
    prefetchReduction: true,
    activeRequests: () => [],
    isAcksLate: () => true,
    cancel: () => undefined,
    consumers: () => [],
    held: () => 0,
    prefetchCount: () => 8,
    basePrefetch: () => 8,
    applyPrefetch: async () => undefined,
    watchdogIntervalS: 0.05,
    ...over,
  })
}

/** Moves the mocked interval clock on by `ms`, 5 ms at a time, letting each tick's async work finish. */
async function advance(timers: { tick(ms: number): void }, ms: number): Promise<void> {
  for (let passed = 0; passed < ms; passed += 5) {
    timers.tick(5)
    await new Promise((resolve) => setImmediate(resolve))
  }
}

it('[watchdog] a consumer idle with room while its queue has messages is re-created; a busy one is not', async (t) => {
  // The watchdog runs on setInterval: a mocked one runs it without waiting.
  t.mock.timers.enable({ apis: ['setInterval'] })
  let recreated = 0
  let received = 0
  const g = guard({
    transport: fakeTransport(() => 5),
    consumers: () => [{ name: 'q', received, recreate: async () => void recreated++ }],
  })
  g.start()
  await advance(t.mock.timers, 180)
  assert.ok(recreated >= 1, 'stalled consumer re-created')
  const before = recreated
  const busy = setInterval(() => received++, 5)
  await advance(t.mock.timers, 180)
  clearInterval(busy)
  g.stop()
  assert.equal(recreated, before, 'a consumer that receives is left alone')
})

it('[worker_enable_prefetch_count_reduction] window = max(1, base - active) after a reconnect, restored per finished task', () => {
  const active = [{ restored: false }, { restored: false }, { restored: false }] as unknown as Request[]
  const transport = fakeTransport(() => 0)
  const g = guard({ transport, activeRequests: () => active, watchdogIntervalS: 0 })
  g.start()
  ;(transport as unknown as EventEmitter).emit('connection:lost', new Error('gone'))
  ;(transport as unknown as EventEmitter).emit('connection:restored')
  assert.equal(g.reduce(8), 5)
  g.taskDone()
  g.taskDone()
  assert.equal(g.reduce(8), 7)
  g.taskDone()
  assert.equal(g.reduce(8), 8)
  g.stop()
})
