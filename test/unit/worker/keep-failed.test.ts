// What a worker keeps of a task that failed, for `tsq failed retry`: the
// delivery as it came (body bytes, properties and headers, exchange, routing
// key, queue) with the worker, the time and the exception; a body past the
// bound is not kept, and a store that fails is a warning, never the task's
// outcome; without a result backend nothing is kept.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { KeptMessage, ResultBackend } from '../../../src/backends/index.js'
import { KEPT_MAX_BODY_BYTES } from '../../../src/backends/index.js'
import { keepFailedMessage } from '../../../src/worker/task-path/keep-failed.js'
import type { Request } from '../../../src/worker/task-path/request.js'
import type { RunnerOptions } from '../../../src/worker/task-path/runner-options.js'

function setup(keep: (m: KeptMessage) => Promise<void>, body = Buffer.from([1, 0, 255])) {
  const warnings: string[] = []
  const backend = { failedStore: () => ({ keep }) } as unknown as ResultBackend
  const o = { backend, hostname: 'w1@host', log: { warning: (line: string) => warnings.push(line) } } as unknown as RunnerOptions
  const request = {
    message: { id: 't1', task: 'proj.charge' },
    delivery: {
      body,
      properties: {
        contentType: 'application/json',
        contentEncoding: 'utf-8',
        headers: { id: 't1', big: 2n ** 64n + 1n },
        deliveryMode: 2,
        priority: 5,
      },
      exchange: 'billing',
      routingKey: 'billing.charge',
      queue: 'billing',
    },
  } as unknown as Request
  return { o, request, warnings }
}

const exc = { type: 'ValueError', args: ['boom'], module: 'builtins', message: 'boom' }

describe('keepFailedMessage', () => {
  it('keeps the delivery as it came, with the worker, the time and the exception', async () => {
    const kept: KeptMessage[] = []
    const { o, request, warnings } = setup(async (m) => void kept.push(m))
    await keepFailedMessage(o, request, exc, "ValueError('boom')")
    assert.equal(kept.length, 1)
    const k = kept[0]!
    assert.deepEqual(
      { ...k, failedAt: undefined },
      {
        taskId: 't1',
        task: 'proj.charge',
        worker: 'w1@host',
        failedAt: undefined,
        excType: 'ValueError',
        exception: "ValueError('boom')",
        body: Buffer.from([1, 0, 255]),
        properties: request.delivery.properties,
        exchange: 'billing',
        routingKey: 'billing.charge',
        queue: 'billing',
      },
    )
    assert.ok(!Number.isNaN(Date.parse(k.failedAt)))
    assert.notEqual(k.properties.headers, request.delivery.properties.headers, 'a copy: later changes to the delivery do not reach it')
    assert.deepEqual(warnings, [])
  })

  it('a store that fails, or a body past the bound, is a warning and nothing else', async () => {
    const failing = setup(async () => {
      throw new Error('READONLY')
    })
    await keepFailedMessage(failing.o, failing.request, exc, 'x')
    assert.match(failing.warnings[0]!, /was not kept for `tsq failed retry`: READONLY/)
    let called = false
    const large = setup(async () => void (called = true), Buffer.alloc(KEPT_MAX_BODY_BYTES + 1))
    await keepFailedMessage(large.o, large.request, exc, 'x')
    assert.equal(called, false)
    assert.match(large.warnings[0]!, /too large to keep/)
  })

  it('keeps nothing without a result backend', async () => {
    const { o, request } = setup(async () => assert.fail('kept'))
    await keepFailedMessage({ ...o, backend: null }, request, exc, 'x')
  })
})
