import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  EXCEPTION_STATES,
  MalformedMessageError,
  PROPAGATE_STATES,
  READY_STATES,
  States,
  decodeResultMeta,
  describeResult,
  encodeException,
  encodeResultMeta,
  encodeRpcResult,
  exceptionRepr,
  exceptionText,
  statePrecedence,
  dumps,
  joinResultTree,
  loads,
  resultFromTuple,
  resultTreeTaskIds,
  resultTuple,
  type ResultNode,
} from '../../../src/protocol/index.js'
import { loadFixture } from './fixtures.js'

const rpc = loadFixture<{ success: string; failure: string }>('spec-2.4-rpc-results.json')

describe('spec §2.1 states', () => {
  it('state sets', () => {
    assert.deepEqual([...READY_STATES].sort(), ['FAILURE', 'REVOKED', 'SUCCESS'])
    assert.deepEqual([...EXCEPTION_STATES].sort(), ['FAILURE', 'RETRY', 'REVOKED'])
    assert.deepEqual([...PROPAGATE_STATES].sort(), ['FAILURE', 'REVOKED'])
  })
  it('precedence puts unknown states between FAILURE and REVOKED', () => {
    assert.ok(statePrecedence('SUCCESS') < statePrecedence('FAILURE'))
    assert.ok(statePrecedence('FAILURE') < statePrecedence('CUSTOM'))
    assert.ok(statePrecedence('CUSTOM') < statePrecedence('REVOKED'))
    assert.ok(statePrecedence('RETRY') < statePrecedence('PENDING'))
  })
})

describe('spec §2.2 key-value result meta', () => {
  it('writes Celery key order with naive UTC date_done', () => {
    const text = encodeResultMeta({
      taskId: 'dddd0001',
      status: States.SUCCESS,
      result: 5,
      dateDone: new Date(Date.UTC(2026, 10, 22, 5, 22, 32, 396)),
      children: [[['dddd0002', null], null]],
      parentId: 'p1',
    })
    assert.equal(
      text,
      '{"status": "SUCCESS", "result": 5, "traceback": null, "children": [[["dddd0002", null], null]], "date_done": "2026-11-22T05:22:32.396000", "parent_id": "p1", "task_id": "dddd0001"}',
    )
  })
  it('omits the fraction at a whole second, and date_done is null for non-ready states', () => {
    assert.match(
      encodeResultMeta({ taskId: 't', status: 'SUCCESS', result: null, dateDone: new Date(Date.UTC(2024, 0, 1)) }),
      /"date_done": "2024-01-01T00:00:00",/,
    )
    const retry = encodeResultMeta({
      taskId: 't',
      status: 'RETRY',
      result: encodeException('ValueError', ['x']),
      dateDone: new Date(),
      groupId: 'g',
    })
    assert.equal(
      retry,
      '{"status": "RETRY", "result": {"exc_type": "ValueError", "exc_message": ["x"], "exc_module": "builtins"}, "traceback": null, "children": [], "date_done": null, "group_id": "g", "task_id": "t"}',
    )
  })
  it('revoked meta as §1.7 shows it', () => {
    const text = encodeResultMeta({
      taskId: 't',
      status: 'REVOKED',
      result: encodeException('TaskRevokedError', ['revoked'], 'celery.exceptions'),
      dateDone: new Date(Date.UTC(2024, 0, 1)),
    })
    assert.ok(
      text.startsWith(
        '{"status": "REVOKED", "result": {"exc_type": "TaskRevokedError", "exc_message": ["revoked"], "exc_module": "celery.exceptions"}',
      ),
    )
  })
  it('extended fields come after parent_id and before task_id', () => {
    const text = encodeResultMeta({
      taskId: 't',
      status: 'STARTED',
      result: { pid: 1, hostname: 'w1@h' },
      extended: { name: 'tasks.add', args: [1], kwargs: {}, worker: 'w1@h', retries: 0, queue: 'celery' },
    })
    assert.deepEqual(Object.keys(JSON.parse(text) as object), [
      'status',
      'result',
      'traceback',
      'children',
      'date_done',
      'name',
      'args',
      'kwargs',
      'worker',
      'retries',
      'queue',
      'task_id',
    ])
  })
  it('decode round-trips', () => {
    const text = encodeResultMeta({
      taskId: 't1',
      status: 'FAILURE',
      result: encodeException('ValueError', ['boom', 42]),
      traceback: 'tb',
      dateDone: new Date(Date.UTC(2024, 0, 1, 0, 0, 0, 5)),
    })
    const meta = decodeResultMeta(text)
    assert.equal(meta.task_id, 't1')
    assert.equal(meta.status, 'FAILURE')
    assert.equal(meta.traceback, 'tb')
    assert.equal(meta.date_done, '2024-01-01T00:00:00.005000')
    assert.deepEqual(meta.result, { exc_type: 'ValueError', exc_message: ['boom', 42], exc_module: 'builtins' })
  })
  it('decode rejects garbage', () => {
    for (const bad of ['x', '[]', '{"result": 1}']) assert.throws(() => decodeResultMeta(bad), MalformedMessageError)
  })
})

describe('spec §2.4 rpc result bodies', () => {
  it('encodes the captured success and failure bytes', () => {
    assert.equal(encodeRpcResult({ taskId: 'bbbbbbbb-0000-0000-0000-000000000001', status: 'SUCCESS', result: 5 }), rpc.success)
    assert.equal(
      encodeRpcResult({
        taskId: 'bbbbbbbb-0000-0000-0000-000000000002',
        status: 'FAILURE',
        result: encodeException('ValueError', ['x', 42]),
        traceback: "Traceback (most recent call last):\nValueError: ('x', 42)\n",
      }),
      rpc.failure,
    )
  })
  it('decodes the short form (no date_done)', () => {
    const meta = decodeResultMeta(rpc.failure)
    assert.equal(meta.date_done, null)
    assert.equal(describeResult(meta), "ValueError: ('x', 42)")
  })
})

describe('exception rendering', () => {
  it('repr and text as Python prints them', () => {
    assert.equal(exceptionRepr(encodeException('ValueError', ['boom', 42])), "ValueError('boom', 42)")
    assert.equal(exceptionRepr(encodeException('KeyError', ['nosuchcommand'])), "KeyError('nosuchcommand')")
    assert.equal(exceptionRepr(encodeException('TimeLimitExceeded', [])), 'TimeLimitExceeded()')
    assert.equal(exceptionText(encodeException('ValueError', ['boom'])), 'ValueError: boom')
    assert.equal(exceptionText(encodeException('WorkerLostError', [])), 'WorkerLostError')
  })
  it('describeResult prints non-exception results as Python str()', () => {
    assert.equal(describeResult({ status: 'SUCCESS', result: 'text' }), 'text')
    assert.equal(describeResult({ status: 'SUCCESS', result: { a: [1, true, null] } }), "{'a': [1, True, None]}")
  })
})

describe("spec §2.3 a chord header saved whole (Celery's GroupResult.save / restore / join_native)", () => {
  // What Celery 5.2.6's worker saved for test_nested_group_chain's chord (MONITOR):
  // [add.si(1, 100), add.si(1, 200) | group(add.si(1, 1000), add.si(1, 2000))].
  const captured =
    '{"result": [["51ca", null], [[["0f32", null], null], [["0c59", [["cc33", null], null]], [[["a2c9", null], null], [["c34c", null], null]]]]]}'
  const leaf = (id: string, parent: ResultNode | null = null): ResultNode => ({ id, parent, children: null })
  const header: ResultNode = {
    id: '51ca',
    parent: null,
    children: [leaf('0f32'), { id: '0c59', parent: leaf('cc33'), children: [leaf('a2c9'), leaf('c34c')] }],
  }

  it("as_tuple and result_from_tuple read and write Celery's bytes", () => {
    assert.deepEqual(resultFromTuple((loads(captured) as { result: unknown }).result), header)
    assert.equal(dumps({ result: resultTuple(header) }), captured)
    // A bare id where the [id, parent] pair goes, as Python's result_from_tuple takes it.
    assert.deepEqual(resultFromTuple(['x', null]), leaf('x'))
    assert.deepEqual(resultTreeTaskIds(header), ['0f32', 'a2c9', 'c34c'])
    for (const bad of [null, 'x', [['x', null]], [[1, null], null], [['x', null], 'members']])
      assert.throws(() => resultFromTuple(bad), MalformedMessageError)
    let deep: unknown = [['x', null], null]
    for (let i = 0; i < 200; i++) deep = [['x', null], [deep]]
    assert.throws(() => resultFromTuple(deep), /nests deeper/)
  })

  const ok = (result: unknown) => ({ status: 'SUCCESS', result })
  const failed = (type: string, message: string, module = 'builtins') => ({
    status: 'FAILURE',
    result: { exc_type: type, exc_message: [message], exc_module: module },
  })

  it("the body gets each member's result in header order, a group's as a nested list", () => {
    const metas: Record<string, ReturnType<typeof ok>> = { '0f32': ok(101), a2c9: ok(1001), c34c: ok(2001) }
    assert.deepEqual(
      joinResultTree(header, (id) => metas[id]),
      { ok: true, values: [101, [1001, 2001]] },
    )
  })

  it('a failure raised through the join: groups are read before tasks, as iter_native reads them; a ChordError keeps its message', () => {
    const both = { '0f32': failed('KeyError', 'plain'), a2c9: ok(1), c34c: failed('ValueError', 'in the group') }
    assert.deepEqual(
      joinResultTree(header, (id) => both[id as keyof typeof both]),
      { ok: false, error: "Join error: ValueError('in the group')" },
    )
    const plainOnly = { '0f32': failed('KeyError', 'plain'), a2c9: ok(1), c34c: ok(2) }
    assert.deepEqual(
      joinResultTree(header, (id) => plainOnly[id as keyof typeof plainOnly]),
      { ok: false, error: "Join error: KeyError('plain')" },
    )
    const chordError = { '0f32': ok(1), a2c9: failed('ChordError', 'Dependency x raised KeyError()', 'celery.exceptions'), c34c: ok(2) }
    assert.deepEqual(
      joinResultTree(header, (id) => chordError[id as keyof typeof chordError]),
      { ok: false, error: 'Dependency x raised KeyError()' },
    )
  })

  it("a result that is not there is the join's timeout, in result_chord_join_timeout's words", () => {
    assert.deepEqual(
      joinResultTree(header, (id) => (id === 'c34c' ? { status: 'STARTED', result: null } : ok(1))),
      { ok: false, error: "Join error: TimeoutError('Operation timed out (3.0)')" },
    )
    assert.deepEqual(
      joinResultTree(header, () => undefined, 10),
      { ok: false, error: "Join error: TimeoutError('Operation timed out (10.0)')" },
    )
  })
})
