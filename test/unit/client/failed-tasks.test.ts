// The failed-task inbox without a broker: a kept message survives its store's
// encoding byte for byte (body, headers with ints past 2^64, properties); the
// filters (task and worker globs, exception text in any case, time bounds,
// ages); the list merged from the backend's failures, kept messages and events
// (a kept task that since succeeded is left out); and a replay that publishes
// the kept message unchanged, to its exchange and routing key, under its id.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { FailedStore, KeptMessage, ResultBackend } from '../../../src/backends/index.js'
import { decodeKeptMessage, encodeKeptMessage } from '../../../src/backends/index.js'
import { parseWhen } from '../../../src/cli/failed-inbox.js'
import { listFailed, matchesFailedFilter, replayFailed, ResendRefusedError, type FailedTask } from '../../../src/client/index.js'
import type { OutgoingMessage, Transport } from '../../../src/transport/index.js'

const kept = (taskId: string, extra: Partial<KeptMessage> = {}): KeptMessage => ({
  taskId,
  task: 'proj.charge',
  worker: 'w1@host',
  failedAt: '2026-12-07T10:00:00.000Z',
  excType: 'ValueError',
  exception: "ValueError('boom')",
  body: Buffer.from([0x2d, 0x20, 0x00, 0xff, 0x0a]),
  properties: {
    contentType: 'application/x-yaml',
    contentEncoding: 'utf-8',
    headers: { id: taskId, task: 'proj.charge', big: 18446744073709551617n, argsrepr: "('a\\x00b',)", nested: { n: [1, null] } },
    deliveryMode: 2,
    priority: 3,
    correlationId: taskId,
    replyTo: 'reply-q',
  },
  exchange: 'billing',
  routingKey: 'billing.charge',
  queue: 'billing',
  ...extra,
})

function fakeBackend(results: Record<string, Record<string, unknown>>, kepts: KeptMessage[]): ResultBackend {
  const store: FailedStore = {
    failures: async () =>
      Object.values(results).filter((m) => m.status === 'FAILURE') as unknown as Awaited<ReturnType<FailedStore['failures']>>,
    keep: async () => undefined,
    kept: async (id) => kepts.find((k) => k.taskId === id) ?? null,
    keptList: async () => kepts,
    drop: async () => undefined,
  }
  return {
    displayUrl: 'redis://fake/1',
    get: async (id: string) => results[id] ?? null,
    failedStore: () => store,
  } as unknown as ResultBackend
}

const failure = (id: string, extra: Record<string, unknown> = {}) => ({
  task_id: id,
  status: 'FAILURE',
  result: { exc_type: 'KeyError', exc_message: ['k'], exc_module: 'builtins' },
  traceback: 'Traceback...',
  date_done: '2026-12-07T09:00:00.000000',
  children: [],
  ...extra,
})

describe('kept messages', () => {
  it('decode to what was kept: body bytes, big-int headers, properties', () => {
    const k = kept('t1')
    const back = decodeKeptMessage(encodeKeptMessage(k))
    assert.deepEqual(back, k)
    assert.ok(back.body.equals(k.body))
    assert.equal(back.properties.headers.big, 18446744073709551617n)
  })
})

describe('filters', () => {
  const t: FailedTask = {
    taskId: 'x',
    task: 'proj.charge',
    excType: 'ValueError',
    exception: "ValueError('Card declined')",
    worker: 'celery@billing-1',
    failedAt: '2026-12-07T10:00:00.000000',
    queue: null,
    traceback: null,
    sources: ['backend'],
    replay: null,
  }
  it('task and worker globs, exception text in any case, time bounds (naive times are UTC)', () => {
    assert.ok(matchesFailedFilter(t, { task: 'proj.*', worker: 'celery@billing-*', exception: 'card DECLINED' }))
    assert.ok(!matchesFailedFilter(t, { task: 'proj' }))
    assert.ok(!matchesFailedFilter(t, { exception: 'KeyError' }))
    assert.ok(matchesFailedFilter(t, { since: new Date('2026-12-07T09:59:59Z'), until: new Date('2026-12-07T10:00:01Z') }))
    assert.ok(!matchesFailedFilter(t, { since: new Date('2026-12-07T10:00:01Z') }))
    assert.ok(!matchesFailedFilter({ ...t, failedAt: null }, { since: new Date(0) }))
  })
  it('--since takes ages and ISO times, and refuses anything else', () => {
    const now = Date.parse('2026-12-07T12:00:00Z')
    assert.equal(parseWhen('2h', 'since', now).toISOString(), '2026-12-07T10:00:00.000Z')
    assert.equal(parseWhen('1d', 'since', now).toISOString(), '2026-12-06T12:00:00.000Z')
    assert.equal(parseWhen('2026-12-01T00:00:00Z', 'since', now).toISOString(), '2026-12-01T00:00:00.000Z')
    assert.throws(() => parseWhen('yesterday', 'since', now), /--since "yesterday": not an ISO 8601 time/)
  })
})

describe('the inbox', () => {
  it('merges the backend, kept messages and events, leaving out a kept task that since succeeded', async () => {
    const backend = fakeBackend(
      {
        both: failure('both'),
        py: failure('py', { name: 'proj.py', args: [1], kwargs: {}, worker: 'py@h' }),
        bare: failure('bare'),
        healed: { task_id: 'healed', status: 'SUCCESS', result: 1 },
      },
      [kept('both'), kept('healed'), kept('ignored-result', { failedAt: '2026-12-07T11:00:00.000Z' })],
    )
    const events = [
      { uuid: 'ev', name: 'proj.ev', exception: "TypeError('x')", worker: 'w2', timestamp: Date.parse('2026-12-07T08:00:00Z') / 1000 },
    ]
    const list = await listFailed(backend, {}, { events })
    const by = Object.fromEntries(list.map((t) => [t.taskId, t]))
    assert.deepEqual(Object.keys(by).sort(), ['bare', 'both', 'ev', 'ignored-result', 'py'])
    assert.equal(by.both!.replay, 'message')
    assert.deepEqual(by.both!.sources, ['backend', 'kept'])
    assert.equal(by.both!.exception, "KeyError('k')")
    assert.equal(by.py!.replay, 'arguments')
    assert.equal(by.bare!.replay, null)
    assert.equal(by.ev!.excType, 'TypeError')
    assert.deepEqual(by.ev!.sources, ['events'])
    assert.equal(list[0]!.taskId, 'ignored-result', 'newest first')
    assert.deepEqual(
      (await listFailed(backend, { exception: 'typeerror' }, { events })).map((t) => t.taskId),
      ['ev'],
    )
  })

  it('a replay publishes the kept message unchanged, to its exchange and routing key, under its own id', async () => {
    const published: { exchange: string; routingKey: string; message: OutgoingMessage }[] = []
    const transport = {
      publish: async (exchange: string, routingKey: string, message: OutgoingMessage) =>
        void published.push({ exchange, routingKey, message }),
    } as unknown as Transport
    const k = kept('t1')
    const r = await replayFailed(transport, fakeBackend({}, [k]), 't1')
    assert.deepEqual(r, { taskId: 't1', from: 't1', how: 'message', exchange: 'billing', routingKey: 'billing.charge' })
    assert.equal(published.length, 1)
    assert.equal(published[0]!.exchange, 'billing')
    assert.equal(published[0]!.routingKey, 'billing.charge')
    assert.ok(published[0]!.message.body.equals(k.body))
    assert.deepEqual(published[0]!.message.properties, k.properties)
    await assert.rejects(replayFailed(transport, fakeBackend({ bare: failure('bare') }, []), 'bare'), ResendRefusedError)
  })
})
