// `tsq why`'s verdict: which state each combination of evidence gives, the
// exit status a script branches on, and how workers' replies (tsq's query_task
// with eta/rate_limit, Celery's scheduled timer entries, revoked lists) are read.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { readWorkerReplies, whyVerdict, WHY_EXIT_CODES, type WhyEvidence } from '../../../src/client/index.js'
import { ExitCode } from '../../../src/protocol/index.js'

const ID = '6f0c0a0e-1111-4000-8000-000000000001'
const AT = 1_800_000_000

function evidence(over: Partial<WhyEvidence> = {}): WhyEvidence {
  return {
    taskId: ID,
    at: AT,
    broker: { kind: 'redis', url: 'redis://127.0.0.1:6379/0' },
    backend: { url: 'redis://127.0.0.1:6379/1', record: null, error: null },
    events: {
      source: 'listen',
      windowS: 1,
      timeline: [],
      state: null,
      name: null,
      worker: null,
      routingKey: null,
      sent: null,
      received: null,
      started: null,
    },
    workers: { replied: ['w1@h'], holders: [], revokedBy: [] },
    queues: [{ name: 'celery', depth: 0, consumers: 1 }],
    located: { found: null, depths: { celery: 0 }, scanned: 0, truncated: false },
    delayLadder: null,
    ...over,
  }
}

const record = (status: string, result: unknown = null) => ({
  status,
  result,
  traceback: null,
  children: [],
  date_done: '2027-01-15T08:00:00.000000',
  task_id: ID,
})

const holder = (state: 'active' | 'reserved' | 'scheduled' | 'rate-limited', extra = {}) => ({
  node: 'w1@h',
  state,
  name: 'proj.add',
  eta: null,
  rateLimit: null,
  timeStart: null,
  workerPid: null,
  ...extra,
})

describe('why verdict', () => {
  it('no trace anywhere: unknown, exit 7', () => {
    const a = whyVerdict(evidence())
    assert.equal(a.state, 'unknown')
    assert.equal(a.exitCode, 7)
    assert.match(a.summary, /^No trace of it/)
    assert.ok(a.evidence.some((l) => l.includes("no record of it (Celery's PENDING)")))
  })

  it('the backend says SUCCESS / FAILURE / REVOKED: exit 0 / 1 / 6, the exception in the summary', () => {
    assert.equal(whyVerdict(evidence({ backend: { url: 'b', record: record('SUCCESS', 5), error: null } })).exitCode, 0)
    const failed = whyVerdict(
      evidence({ backend: { url: 'b', record: record('FAILURE', { exc_type: 'ValueError', exc_message: ['boom'] }), error: null } }),
    )
    assert.equal(failed.state, 'failed')
    assert.equal(failed.exitCode, 1)
    assert.match(failed.summary, /ValueError: boom/)
    assert.equal(whyVerdict(evidence({ backend: { url: 'b', record: record('REVOKED'), error: null } })).exitCode, 6)
  })

  it('a worker running it wins over everything: exit 5, where and since when, queue wait from the sent event', () => {
    const a = whyVerdict(
      evidence({
        backend: { url: 'b', record: record('STARTED'), error: null },
        workers: { replied: ['w1@h'], holders: [holder('active', { timeStart: AT - 4, workerPid: 42 })], revokedBy: [] },
        events: { ...evidence().events, sent: AT - 10, timeline: [{ type: 'task-sent', timestamp: AT - 10, hostname: null }] },
      }),
    )
    assert.equal(a.state, 'running')
    assert.equal(a.exitCode, 5)
    assert.match(a.summary, /on w1@h \(pid 42\) since .*, 4\.0 s/)
    assert.equal(a.queueWaitS, 6)
  })

  it('held by a worker: reserved, scheduled with its ETA, rate-limited with its next token: exit 4', () => {
    const reserved = whyVerdict(evidence({ workers: { replied: ['w1@h'], holders: [holder('reserved')], revokedBy: [] } }))
    assert.deepEqual([reserved.state, reserved.detail, reserved.exitCode], ['held', 'reserved', 4])
    const eta = new Date((AT + 30) * 1000).toISOString()
    const scheduled = whyVerdict(evidence({ workers: { replied: ['w1@h'], holders: [holder('scheduled', { eta })], revokedBy: [] } }))
    assert.equal(scheduled.detail, 'scheduled')
    assert.match(scheduled.summary, /until its ETA .*, in 30 s/)
    const limited = whyVerdict(
      evidence({
        workers: { replied: ['w1@h'], holders: [holder('rate-limited', { rateLimit: { rate: '1/m', waitS: 12.5 } })], revokedBy: [] },
      }),
    )
    assert.equal(limited.detail, 'rate-limited')
    assert.match(limited.summary, /rate limit \(1\/m\): next token in 13 s/)
  })

  it('in a revoked list: revoked (exit 6), saying a queued copy is discarded', () => {
    const a = whyVerdict(
      evidence({
        workers: { replied: ['w1@h'], holders: [], revokedBy: ['w1@h'] },
        located: { found: { where: 'queue', queue: 'celery', position: 2, depth: 5 }, depths: { celery: 5 }, scanned: 3, truncated: false },
      }),
    )
    assert.equal(a.exitCode, 6)
    assert.match(a.summary, /still waits in celery/)
  })

  it('found in a Redis queue: queued (exit 3) with its position and depth', () => {
    const a = whyVerdict(
      evidence({
        queues: [{ name: 'celery', depth: 5, consumers: 0 }],
        located: { found: { where: 'queue', queue: 'celery', position: 2, depth: 5 }, depths: { celery: 5 }, scanned: 3, truncated: false },
      }),
    )
    assert.deepEqual([a.state, a.exitCode, a.certain], ['queued', 3, true])
    assert.equal(a.summary, 'Queued in celery: position 2 of 5 (2 messages ahead of it), 0 consumers.')
  })

  it('delivered and not acked, no worker holding it: held (unacked), its worker may be gone', () => {
    const a = whyVerdict(
      evidence({
        workers: { replied: [], holders: [], revokedBy: [] },
        located: {
          found: { where: 'unacked', queue: 'celery', position: null, depth: 0 },
          depths: { celery: 0 },
          scanned: 0,
          truncated: false,
        },
      }),
    )
    assert.deepEqual([a.state, a.detail, a.exitCode], ['held', 'unacked', 4])
  })

  it('RabbitMQ: a queue with messages may hold it (queued, not certain, position unknown); else the delay ladder; else unknown', () => {
    const amqp = { broker: { kind: 'amqp' as const, url: 'amqp://x//' }, located: null }
    const maybe = whyVerdict(evidence({ ...amqp, queues: [{ name: 'celery', depth: 3, consumers: 0 }] }))
    assert.deepEqual([maybe.state, maybe.detail, maybe.certain, maybe.exitCode], ['queued', 'position-unknown', false, 3])
    assert.match(maybe.summary, /queue celery holds 3 messages with 0 consumers; position unknown/)
    const delayed = whyVerdict(evidence({ ...amqp, delayLadder: 2 }))
    assert.deepEqual([delayed.state, delayed.exitCode], ['delayed', 3])
    assert.equal(whyVerdict(evidence({ ...amqp })).state, 'unknown')
  })

  it('a stored STARTED with no worker running it: unknown, saying its worker may be gone', () => {
    const a = whyVerdict(evidence({ backend: { url: 'b', record: record('STARTED'), error: null } }))
    assert.equal(a.exitCode, 7)
    assert.match(a.summary, /says STARTED: the worker that ran it may be gone/)
  })

  it("the dashboard's events stand in for a backend it does not have", () => {
    const a = whyVerdict(evidence({ backend: null, events: { ...evidence().events, source: 'dashboard', state: 'SUCCESS' } }))
    assert.equal(a.state, 'succeeded')
  })

  it('exit statuses: 0 and 1 as tsq result, the rest clear of every error status', () => {
    assert.equal(WHY_EXIT_CODES.succeeded, ExitCode.OK)
    assert.equal(WHY_EXIT_CODES.failed, ExitCode.FAILURE)
    const errorStatuses = new Set<number>(Object.values(ExitCode))
    for (const [state, code] of Object.entries(WHY_EXIT_CODES))
      if (state !== 'succeeded' && state !== 'failed') assert.ok(!errorStatuses.has(code) && code !== 2, `${state}: ${code}`)
  })
})

describe('reading the workers’ replies', () => {
  const info = { id: ID, name: 'proj.add', type: 'proj.add', hostname: 'w1@h', time_start: AT - 1, worker_pid: 7 }

  it("tsq's query_task: active, reserved, and reserved with eta or rate_limit", () => {
    const eta = new Date((AT + 60) * 1000).toISOString()
    const w = readWorkerReplies(
      ID,
      {
        query: [
          { 'a@h': { [ID]: ['active', info] } },
          { 'b@h': { [ID]: ['reserved', { ...info, eta }] } },
          { 'c@h': { [ID]: ['reserved', { ...info, rate_limit: { rate: '1/m', wait: 30 } }] } },
          { 'd@h': { [ID]: ['reserved', info] } },
          { 'e@h': {} },
        ],
        scheduled: [],
        revoked: [{ 'e@h': [ID] }],
      },
      AT,
    )
    assert.deepEqual(w.replied, ['a@h', 'b@h', 'c@h', 'd@h', 'e@h'])
    assert.deepEqual(
      w.holders.map((h) => [h.node, h.state]),
      [
        ['a@h', 'active'],
        ['b@h', 'scheduled'],
        ['c@h', 'rate-limited'],
        ['d@h', 'reserved'],
      ],
    )
    assert.equal(w.holders[0]!.timeStart, AT - 1)
    assert.deepEqual(w.holders[2]!.rateLimit, { rate: '1/m', waitS: 30 })
    assert.deepEqual(w.revokedBy, ['e@h'])
  })

  it("Celery's scheduled: an entry with an ETA is held for it, one without is a rate limit's", () => {
    const eta = new Date((AT + 60) * 1000).toISOString()
    const w = readWorkerReplies(
      ID,
      {
        query: [{ 'py@h': {} }],
        scheduled: [{ 'py@h': [{ eta, priority: 6, request: info }] }, { 'py2@h': [{ eta: null, priority: 0, request: info }] }],
        revoked: [],
      },
      AT,
    )
    assert.deepEqual(
      w.holders.map((h) => [h.node, h.state, h.eta]),
      [
        ['py@h', 'scheduled', eta],
        ['py2@h', 'rate-limited', null],
      ],
    )
  })
})

describe('why verdict: delivered and not acked while workers reply', () => {
  it('says a Celery worker holding it for a rate limit does not say so', () => {
    const a = whyVerdict(
      evidence({
        located: {
          found: { where: 'unacked', queue: 'celery', position: null, depth: 0 },
          depths: { celery: 0 },
          scanned: 0,
          truncated: false,
        },
      }),
    )
    assert.deepEqual([a.state, a.detail], ['held', 'unacked'])
    assert.match(a.summary, /holding it for its rate limit does not say so/)
  })
})
