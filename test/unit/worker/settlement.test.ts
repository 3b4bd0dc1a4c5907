// The decision table of a task message's settlement (ack, reject, requeue,
// retry, hold): every fate under every combination of acks_late (the task's
// and the worker's), acks_on_failure_or_timeout and reject_on_worker_lost
// matches exactly one row below, and the decision gives that row's answer.
// Each row names where Celery 5.2.6 decides it, or says it is tsq's own.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { FATES, settlementFor, type Fate, type Settlement, type SettlementOptions } from '../../../src/worker/task-path/settlement.js'

type Tri = boolean | undefined
/** '*': any value; 'late'/'early': the task's acks_late, else the worker's. */
interface Row {
  fate: Fate
  acks: 'late' | 'early' | '*'
  aofot: readonly Tri[] | '*'
  rowl: readonly Tri[] | '*'
  then: Settlement
  why: string
}

const ON: readonly Tri[] = [true, undefined]
const OFF: readonly Tri[] = [false]

const row = (fate: Fate, acks: Row['acks'], aofot: Row['aofot'], rowl: Row['rowl'], then: Settlement, why: string): Row => ({
  fate,
  acks,
  aofot,
  rowl,
  then,
  why,
})

const TABLE: readonly Row[] = [
  row('undecodable', '*', '*', '*', 'reject', 'consumer.py on_invalid_task: reject_log_error (requeue=False)'),
  row('over-limit', '*', '*', '*', 'reject', 'tsq: a body past the limits never runs; a dead-letter exchange keeps it'),
  row('content-disallowed', '*', '*', '*', 'reject', 'consumer.py on_invalid_task (ContentDisallowed)'),
  row('signature-invalid', '*', '*', '*', 'ack', 'consumer.py on_decode_error: message.ack()'),
  row('unregistered', '*', '*', '*', 'reject', 'consumer.py on_unknown_task: reject_log_error'),
  row('duplicate', '*', '*', '*', 'ack', 'tsq: a second live copy of a task held here is not run again'),
  row('delayed-on-broker', '*', '*', '*', 'ack', "tsq: the copy in the broker's delayed delivery takes its place"),
  row('revoked', '*', '*', '*', 'ack', 'request.py _announce_revoked: acknowledge()'),
  row('started', 'late', '*', '*', 'hold', 'request.py on_accepted: no ack under acks_late'),
  row('started', 'early', '*', '*', 'ack', 'request.py on_accepted: acknowledge() unless acks_late'),
  row('pool-hand-off-failed', '*', '*', '*', 'reject', 'tsq: the pool cannot take it; it would fail the same way again'),
  row('succeeded', '*', '*', '*', 'ack', 'request.py on_success: acknowledge() under acks_late; acked at start otherwise'),
  row('ignored', '*', '*', '*', 'ack', 'request.py on_failure: Ignore → acknowledge()'),
  row('retried', '*', '*', '*', 'retry', 'request.py on_retry: acknowledge() under acks_late, after trace published the retry'),
  row('failed', 'late', ON, '*', 'ack', 'request.py on_failure: acks_on_failure_or_timeout → acknowledge()'),
  row('failed', 'late', OFF, '*', 'reject', 'request.py on_failure: else reject(requeue=False)'),
  row('failed', 'early', '*', '*', 'ack', 'request.py on_failure: nothing under early ack (acked at start)'),
  row('timed-out', 'late', ON, '*', 'ack', 'request.py on_timeout: acks_late and acks_on_failure_or_timeout → acknowledge()'),
  row('timed-out', 'late', OFF, '*', 'reject', "request.py on_failure (billiard's TimeLimitExceeded): reject(requeue=False)"),
  row('timed-out', 'early', '*', '*', 'ack', 'request.py on_timeout: nothing under early ack (acked at start)'),
  row('worker-lost', 'late', '*', ON, 'requeue', 'request.py on_failure: reject_on_worker_lost and WorkerLostError → reject(requeue=True)'),
  row('worker-lost', 'late', ON, OFF, 'ack', 'request.py on_failure: acks_on_failure_or_timeout → acknowledge()'),
  row('worker-lost', 'late', OFF, OFF, 'reject', 'request.py on_failure: else reject(requeue=False)'),
  row('worker-lost', 'early', '*', '*', 'ack', 'request.py on_failure: nothing under early ack; the failure is stored'),
  row('rejected', '*', '*', '*', 'reject', 'request.py on_failure: Reject → reject(requeue=exc.requeue)'),
  row('rejected-requeue', '*', '*', '*', 'requeue', 'request.py on_failure: Reject → reject(requeue=exc.requeue)'),
  row('not-recorded', '*', '*', '*', 'requeue', 'tsq: an end that could not be recorded goes back for another run'),
  row('shutdown', '*', '*', '*', 'requeue', 'worker shutdown: unstarted and cold-cancelled messages go back (Celery restores them)'),
]

const TRI: readonly Tri[] = [true, false, undefined]

/** Every (task options, worker acks_late) the decision can be asked about. */
function* combinations(): Generator<{ task: SettlementOptions; workerAcksLate: boolean }> {
  for (const workerAcksLate of [true, false]) {
    for (const acksLate of TRI) {
      for (const acksOnFailureOrTimeout of TRI) {
        for (const rejectOnWorkerLost of TRI) {
          const task: SettlementOptions = {}
          if (acksLate !== undefined) task.acksLate = acksLate
          if (acksOnFailureOrTimeout !== undefined) task.acksOnFailureOrTimeout = acksOnFailureOrTimeout
          if (rejectOnWorkerLost !== undefined) task.rejectOnWorkerLost = rejectOnWorkerLost
          yield { task, workerAcksLate }
        }
      }
    }
  }
}

function matches(r: Row, fate: Fate, task: SettlementOptions, workerAcksLate: boolean): boolean {
  if (r.fate !== fate) return false
  const late = task.acksLate ?? workerAcksLate
  if (r.acks !== '*' && (r.acks === 'late') !== late) return false
  if (r.aofot !== '*' && !r.aofot.includes(task.acksOnFailureOrTimeout)) return false
  if (r.rowl !== '*' && !r.rowl.includes(task.rejectOnWorkerLost)) return false
  return true
}

describe('[settlement] the decision table', () => {
  for (const fate of FATES) {
    it(`[settlement] ${fate}: every combination of options matches one row, and the decision is that row's`, () => {
      for (const { task, workerAcksLate } of combinations()) {
        const rows = TABLE.filter((r) => matches(r, fate, task, workerAcksLate))
        const where = `${fate} task=${JSON.stringify(task)} worker.acksLate=${workerAcksLate}`
        assert.equal(rows.length, 1, `${where}: ${rows.length} rows match`)
        assert.equal(settlementFor(fate, task, { acksLate: workerAcksLate }), rows[0]!.then, `${where} (${rows[0]!.why})`)
      }
    })
  }

  it('[settlement] every row of the table is about a fate the decision knows', () => {
    for (const r of TABLE) assert.ok(FATES.includes(r.fate), r.fate)
  })

  it("[settlement] a task's acks_late overrides the worker's, both ways", () => {
    assert.equal(settlementFor('started', { acksLate: true }, { acksLate: false }), 'hold')
    assert.equal(settlementFor('started', { acksLate: false }, { acksLate: true }), 'ack')
    assert.equal(settlementFor('failed', { acksLate: true, acksOnFailureOrTimeout: false }, { acksLate: false }), 'reject')
    assert.equal(settlementFor('worker-lost', { acksLate: false }, { acksLate: true }), 'ack')
  })

  it("[settlement] tsq's defaults: a late ack's lost process requeues (Celery's reject_on_worker_lost is False), a failure acks", () => {
    assert.equal(settlementFor('worker-lost', {}, { acksLate: true }), 'requeue')
    assert.equal(settlementFor('worker-lost', { rejectOnWorkerLost: false }, { acksLate: true }), 'ack')
    assert.equal(settlementFor('failed', {}, { acksLate: true }), 'ack')
  })
})
