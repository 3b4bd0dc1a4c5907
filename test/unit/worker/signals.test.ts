import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { intentFor } from '../../../src/worker/signals.js'
import type { WorkerState } from '../../../src/worker/worker.js'

describe("signals → shutdown intents (Celery's worker guide)", () => {
  const plain = { remapSigterm: false, softEnabled: false }
  const soft = { remapSigterm: false, softEnabled: true }
  const remap = { remapSigterm: true, softEnabled: false }
  const table: Array<[NodeJS.Signals, WorkerState, typeof plain, string]> = [
    ['SIGTERM', 'RUNNING', plain, 'warm'],
    ['SIGTERM', 'WARM_SHUTDOWN', plain, 'ignore'],
    ['SIGTERM', 'RUNNING', remap, 'cold'],
    ['SIGINT', 'RUNNING', plain, 'warm'],
    ['SIGINT', 'WARM_SHUTDOWN', plain, 'cold'],
    ['SIGINT', 'WARM_SHUTDOWN', soft, 'soft'],
    ['SIGINT', 'SOFT_SHUTDOWN', soft, 'cold'],
    ['SIGINT', 'COLD_SHUTDOWN', plain, 'hard'],
    ['SIGQUIT', 'RUNNING', plain, 'cold'],
    ['SIGQUIT', 'RUNNING', soft, 'soft'],
    ['SIGQUIT', 'WARM_SHUTDOWN', soft, 'soft'],
    ['SIGQUIT', 'SOFT_SHUTDOWN', soft, 'cancel-tasks'],
    ['SIGQUIT', 'COLD_SHUTDOWN', plain, 'ignore'],
    ['SIGHUP', 'RUNNING', plain, 'restart'],
    ['SIGHUP', 'WARM_SHUTDOWN', plain, 'ignore'],
    ['SIGUSR1', 'RUNNING', plain, 'dump'],
    ['SIGUSR2', 'RUNNING', plain, 'debugger'],
  ]
  for (const [signal, state, ctx, intent] of table) {
    it(`${signal} in ${state}${ctx.softEnabled ? ' (soft enabled)' : ''}${ctx.remapSigterm ? ' (REMAP_SIGTERM)' : ''} → ${intent}`, () => {
      assert.equal(intentFor(signal, state, ctx), intent)
    })
  }
})
