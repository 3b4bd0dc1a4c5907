import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  MalformedMessageError,
  PyFloat,
  WORKER_SW,
  batchRoutingKey,
  buildEvent,
  decodeEvents,
  dumpEventLine,
  encodeEvent,
  encodeEventBatch,
  eventGroup,
  eventRoutingKey,
  orderEventFields,
  roundLoadavg,
  utcoffsetHours,
  workerEventFields,
} from '../../../src/protocol/index.js'
import { loadFixture } from './fixtures.js'

const f = loadFixture<{ heartbeat: string; task_multi: string }>('spec-5-events.json')

describe('spec §5.2 event body', () => {
  it('builds the captured worker-heartbeat byte for byte', () => {
    const ev = buildEvent(
      'worker-heartbeat',
      workerEventFields({ freq: 2, active: 0, processed: 0, loadavg: [0.341, 0.25, 0.081], sw: WORKER_SW }),
      { hostname: 'w1@vm', utcoffset: 0, pid: 8387, clock: 2, timestamp: 1795324948.5190158 },
    )
    assert.equal(encodeEvent(ev), f.heartbeat)
  })
  it('builds the captured task.multi batch', () => {
    const ev = buildEvent(
      'task-started',
      { uuid: '890ef490-86e7-4d33-a5a9-b85b58e8c844' },
      { hostname: 'w1@vm', utcoffset: 0, pid: 8387, clock: 7, timestamp: 1795324952.3964214 },
    )
    assert.equal(encodeEventBatch([ev]), f.task_multi)
  })
  it('a timestamp given in fields keeps its place; type is always last', () => {
    const ev = buildEvent(
      'task-sent',
      { uuid: 'u', timestamp: 5, name: 'n' },
      { hostname: 'h', utcoffset: -2, pid: 1, clock: 3, timestamp: 9 },
    )
    assert.deepEqual(Object.keys(ev), ['hostname', 'utcoffset', 'pid', 'clock', 'uuid', 'timestamp', 'name', 'type'])
    assert.equal(ev.timestamp, 5)
    assert.equal(
      encodeEvent(ev),
      '{"hostname": "h", "utcoffset": -2, "pid": 1, "clock": 3, "uuid": "u", "timestamp": 5.0, "name": "n", "type": "task-sent"}',
    )
  })
  it('orders fields as §5.3 lists them', () => {
    assert.deepEqual(Object.keys(orderEventFields('task-succeeded', { runtime: 0.1, result: '5', uuid: 'u', extra: 1 })), [
      'uuid',
      'result',
      'runtime',
      'extra',
    ])
  })
})

describe('spec §5.1 routing and helpers', () => {
  it('routing keys', () => {
    assert.equal(eventRoutingKey('task-succeeded'), 'task.succeeded')
    assert.equal(eventRoutingKey('worker-elect-ack'), 'worker.elect.ack')
    assert.equal(eventGroup('task-started'), 'task')
    assert.equal(batchRoutingKey('task'), 'task.multi')
  })
  it('loadavg rounds up to 2 decimals', () => {
    assert.deepEqual(roundLoadavg([0.341, 0.25, 0]), [0.35, 0.25, 0])
  })
  it('utcoffset is an integer number of hours', () => {
    assert.ok(Number.isInteger(utcoffsetHours(new Date(0))))
  })
})

describe('spec §5.2 decodeEvents', () => {
  it('accepts a single object or a list', () => {
    assert.equal(decodeEvents(f.heartbeat)[0]?.type, 'worker-heartbeat')
    assert.equal(decodeEvents(f.task_multi)[0]?.type, 'task-started')
  })
  it('rejects other shapes', () => {
    for (const bad of ['1', '[1]', 'x', 'null']) assert.throws(() => decodeEvents(bad), MalformedMessageError, bad)
  })
})

// Expected lines printed by Celery 5.2.6's own Dumper.on_event for the same dicts.
describe('celery events --dump lines (celery/events/dumper.py)', () => {
  it("worker events: Celery's human names, fields sorted, Python str() values", () => {
    const names = new Map<string, string>()
    const line = dumpEventLine(
      {
        hostname: 'w1@h',
        type: 'worker-heartbeat',
        timestamp: 1795471051.5,
        freq: new PyFloat(2),
        active: 0,
        loadavg: [0.44, 0.4, 0.45],
        sw_ident: 'py-celery',
        clock: 3,
        utcoffset: 0,
      },
      names,
    )
    assert.equal(
      line,
      'w1@h [2026-11-23 21:57:31.500000] heartbeat: active=0, clock=3, freq=2.0, loadavg=[0.44, 0.4, 0.45], sw_ident=py-celery, utcoffset=0',
    )
    assert.equal(
      dumpEventLine({ hostname: 'w1@h', type: 'worker-online', timestamp: 1795471051 }, names),
      'w1@h [2026-11-23 21:57:31] started ',
    )
    assert.equal(
      dumpEventLine({ hostname: 'w1@h', type: 'worker-offline', timestamp: 1795471051 }, names),
      'w1@h [2026-11-23 21:57:31] shutdown ',
    )
    // --dump reads floats as PyFloat, so an event sent on a whole second has a PyFloat timestamp (once NaN-NaN-NaN).
    assert.equal(
      dumpEventLine({ hostname: 'w1@h', type: 'worker-offline', timestamp: new PyFloat(1795471051) }, names),
      'w1@h [2026-11-23 21:57:31] shutdown ',
    )
  })

  it('task events: named as their task-received introduced them', () => {
    const names = new Map<string, string>()
    const received = dumpEventLine(
      {
        hostname: 'w',
        type: 'task-received',
        timestamp: 1795471051,
        uuid: 'u1',
        name: 'proj.add',
        args: '(2, 2)',
        kwargs: '{}',
        retries: 0,
        eta: null,
      },
      names,
    )
    assert.equal(received, 'w [2026-11-23 21:57:31] task received: proj.add(u1) args=(2, 2) kwargs={} eta=None, retries=0')
    assert.equal(
      dumpEventLine({ hostname: 'w', type: 'task-succeeded', timestamp: 1795471051, uuid: 'u1', result: '4' }, names),
      'w [2026-11-23 21:57:31] task succeeded: proj.add(u1) args=(2, 2) kwargs={} result=4',
    )
    assert.equal(
      dumpEventLine({ hostname: 'w', type: 'task-failed', timestamp: 1795471051, uuid: 'u9', exception: "TypeError('x')" }, names),
      "w [2026-11-23 21:57:31] task failed:  exception=TypeError('x')",
    )
  })
})
