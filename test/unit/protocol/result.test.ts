import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  EXCEPTION_STATES, MalformedMessageError, PROPAGATE_STATES, READY_STATES, States, decodeResultMeta, describeResult,
  encodeException, encodeResultMeta, encodeRpcResult, exceptionRepr, exceptionText, statePrecedence,
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
      taskId: 'dddd0001', status: States.SUCCESS, result: 5, dateDone: new Date(Date.UTC(2026, 10, 22, 5, 22, 32, 396)),
      children: [[['dddd0002', null], null]], parentId: 'p1',
    })
    assert.equal(text, '{"status": "SUCCESS", "result": 5, "traceback": null, "children": [[["dddd0002", null], null]], "date_done": "2026-11-22T05:22:32.396000", "parent_id": "p1", "task_id": "dddd0001"}')
  })
  it('omits the fraction at a whole second, and date_done is null for non-ready states', () => {
    assert.match(encodeResultMeta({ taskId: 't', status: 'SUCCESS', result: null, dateDone: new Date(Date.UTC(2024, 0, 1)) }), /"date_done": "2024-01-01T00:00:00",/)
    const retry = encodeResultMeta({ taskId: 't', status: 'RETRY', result: encodeException('ValueError', ['x']), dateDone: new Date(), groupId: 'g' })
    assert.equal(retry, '{"status": "RETRY", "result": {"exc_type": "ValueError", "exc_message": ["x"], "exc_module": "builtins"}, "traceback": null, "children": [], "date_done": null, "group_id": "g", "task_id": "t"}')
  })
  it('revoked meta as §1.7 shows it', () => {
    const text = encodeResultMeta({ taskId: 't', status: 'REVOKED', result: encodeException('TaskRevokedError', ['revoked'], 'celery.exceptions'), dateDone: new Date(Date.UTC(2024, 0, 1)) })
    assert.ok(text.startsWith('{"status": "REVOKED", "result": {"exc_type": "TaskRevokedError", "exc_message": ["revoked"], "exc_module": "celery.exceptions"}'))
  })
  it('extended fields come after parent_id and before task_id', () => {
    const text = encodeResultMeta({ taskId: 't', status: 'STARTED', result: { pid: 1, hostname: 'w1@h' }, extended: { name: 'tasks.add', args: [1], kwargs: {}, worker: 'w1@h', retries: 0, queue: 'celery' } })
    assert.deepEqual(Object.keys(JSON.parse(text) as object), ['status', 'result', 'traceback', 'children', 'date_done', 'name', 'args', 'kwargs', 'worker', 'retries', 'queue', 'task_id'])
  })
  it('decode round-trips', () => {
    const text = encodeResultMeta({ taskId: 't1', status: 'FAILURE', result: encodeException('ValueError', ['boom', 42]), traceback: 'tb', dateDone: new Date(Date.UTC(2024, 0, 1, 0, 0, 0, 5)) })
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
    assert.equal(encodeRpcResult({
      taskId: 'bbbbbbbb-0000-0000-0000-000000000002', status: 'FAILURE', result: encodeException('ValueError', ['x', 42]),
      traceback: "Traceback (most recent call last):\nValueError: ('x', 42)\n",
    }), rpc.failure)
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
