// Which stored results give a task's original call exactly, and the reason
// given for each that does not (no backend, nothing stored, no args stored, a
// rounded integer, bytes, django-db's repr text).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { ResultBackend } from '../../../src/backends/backend.js'
import { originalCall, ResendRefusedError } from '../../../src/client/resend.js'
import { decodeResultMeta, PyFloat } from '../../../src/protocol/index.js'

const backendWith = (meta: Record<string, unknown> | null): ResultBackend =>
  ({ displayUrl: 'redis://127.0.0.1:6379/1', get: async () => meta }) as unknown as ResultBackend

test('result_extended meta read from JSON gives the exact call', async () => {
  const meta = decodeResultMeta(
    '{"status": "SUCCESS", "result": 1, "traceback": null, "children": [], "date_done": null, "task_id": "t", "name": "proj.add", "args": ["a\\u0000b", "\\u200b", 18446744073709551617, 2.0], "kwargs": {"n": -18446744073709551617}, "worker": "w", "retries": 0, "queue": "q1"}',
  )
  const call = await originalCall('t', backendWith(meta as unknown as Record<string, unknown>))
  assert.equal(call.task, 'proj.add')
  assert.equal(call.queue, 'q1')
  assert.deepEqual(call.args.slice(0, 3), ['a\u0000b', '\u200b', 18446744073709551617n])
  assert.ok(call.args[3] instanceof PyFloat && call.args[3].value === 2)
  assert.deepEqual(call.kwargs, { n: -18446744073709551617n })
})

test('refusals say why', async () => {
  const refused = async (backend: ResultBackend | null, pattern: RegExp) =>
    assert.rejects(
      originalCall('t', backend),
      (e: unknown) => e instanceof ResendRefusedError && pattern.test(e.message) && /send it again from its client$/.test(e.message),
    )
  await refused(null, /no result backend/)
  await refused(backendWith(null), /holds nothing for it/)
  await refused(backendWith({ status: 'SUCCESS', result: 1 }), /set result_extended = True/)
  await refused(backendWith({ status: 'SUCCESS', name: 'proj.add', args: [2 ** 64], kwargs: {} }), /integer beyond 2\^53/)
  await refused(backendWith({ status: 'SUCCESS', name: 'proj.add', args: '(1,)', kwargs: {} }), /not a list/)
  await refused(
    backendWith({ status: 'SUCCESS', name: 'proj.add', args: [Uint8Array.of(1)], kwargs: {} }),
    /bytes, which a JSON message cannot carry/,
  )
  const django = { displayUrl: 'django-db (sqlite:///x)', get: async () => ({ status: 'FAILURE' }) } as unknown as ResultBackend
  await refused(django, /django-db keeps only the repr/)
})
