// query_task's answer on a tsq worker: Celery's [state, info] for a running
// or reserved task, with `eta` for one held for its ETA and `rate_limit`
// (rate, seconds to the next token) for one waiting for its rate limit, and
// nothing added to a staged one (its token is taken). A fake runner, no pool.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { decodeTaskMessage } from '../../../src/protocol/index.js'
import type { Delivery } from '../../../src/transport/index.js'
import { queryTaskEntry } from '../../../src/worker/control/task-whereabouts.js'
import { TokenBucket } from '../../../src/worker/task-path/limits.js'
import { Request } from '../../../src/worker/task-path/request.js'
import type { TaskRunner } from '../../../src/worker/task-path/task-runner.js'
import { taskDeliveryFields } from '../../helpers/deliveries.js'

function request(name: string, eta?: string): Request {
  const fields = taskDeliveryFields(name, [1, 2])
  if (eta) (fields.properties.headers as Record<string, unknown>).eta = eta
  const delivery = { ...fields, ack: async () => {}, reject: async () => {} } as Delivery
  const message = decodeTaskMessage({
    headers: delivery.properties.headers,
    body: delivery.body,
    contentType: delivery.properties.contentType,
    contentEncoding: delivery.properties.contentEncoding,
  })
  return new Request(message, delivery, 'w1@h')
}

describe('query_task on a tsq worker', () => {
  const running = request('proj.add')
  const later = request('proj.add', '2030-01-01T00:00:00+00:00')
  const limited = request('proj.limited')
  const free = request('proj.add')
  const staged = request('proj.limited')
  // A bucket whose token is gone: 1 per 100 s, its clock standing still.
  const empty = new TokenBucket(0.01, 1, () => 0)
  empty.take()
  const runner = {
    active: new Map([[running.id, running]]),
    scheduled: new Map([[later.id, { request: later, timer: null }]]),
    waiting: [limited, free],
    reserved: [staged, limited, free],
    rateLimits: new Map([['proj.limited', { rate: '1/100s', bucket: empty }]]),
  } as unknown as TaskRunner
  const iso = (eta: string) => eta

  it("answers Celery's pair for running and reserved tasks, nothing for an unknown id", () => {
    assert.equal(queryTaskEntry(runner, running.id, iso)?.[0], 'active')
    assert.deepEqual(queryTaskEntry(runner, free.id, iso), ['reserved', free.info()])
    assert.equal(queryTaskEntry(runner, 'nope', iso), undefined)
  })

  it('adds the ETA of a task held for it', () => {
    const [state, info] = queryTaskEntry(runner, later.id, iso)!
    assert.equal(state, 'reserved')
    assert.equal(info.eta, '2030-01-01T00:00:00+00:00')
  })

  it('adds the rate limit and the seconds to its next token for a task waiting for it, not for a staged one', () => {
    const [, info] = queryTaskEntry(runner, limited.id, iso)!
    assert.deepEqual(info.rate_limit, { rate: '1/100s', wait: 100 })
    assert.equal(queryTaskEntry(runner, staged.id, iso)![1].rate_limit, undefined)
  })
})
