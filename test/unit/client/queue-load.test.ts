// The queue load figure: (ready + reserved + running) ÷ the consuming workers'
// capacity, from Celery-shaped remote-control replies (tsq's and Python's
// workers give the same shapes), tasks placed in a queue by its binding, and
// the figures as Prometheus text and as the JSON KEDA's metrics-api scaler reads.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { queueLoadJson, queueLoadMetrics, queueLoads, workerViews } from '../../../src/client/index.js'

/** A Celery 5 worker's active_queues entry for a queue bound by its own name on a direct exchange. */
const celeryQueue = (name: string, exchange = name, routingKey = name) => ({
  name,
  exchange: {
    name: exchange,
    type: 'direct',
    arguments: null,
    durable: true,
    passive: false,
    auto_delete: false,
    delivery_mode: null,
    no_declare: false,
  },
  routing_key: routingKey,
  queue_arguments: null,
  binding_arguments: null,
  consumer_arguments: null,
  durable: true,
  exclusive: false,
  auto_delete: false,
  no_ack: false,
  alias: null,
  bindings: [],
  no_declare: null,
  expires: null,
  message_ttl: null,
  max_length: null,
  max_length_bytes: null,
  max_priority: null,
})
/** A request's info() as Celery's `inspect active` gives it (sent through the default exchange). */
const request = (id: string, routingKey: string, exchange = '') => ({
  id,
  name: 'tasks.add',
  args: '(1, 2)',
  kwargs: '{}',
  type: 'tasks.add',
  hostname: 'x',
  time_start: 1,
  acknowledged: false,
  delivery_info: { exchange, routing_key: routingKey, priority: 0, redelivered: false },
  worker_pid: 1,
})

describe('queue load', () => {
  const replies = {
    stats: {
      'celery@py': { pool: { 'max-concurrency': 4, processes: [1, 2, 3, 4] }, prefetch_count: 16 },
      'celery@ts': { pool: { 'max-concurrency': 2 } },
    },
    active_queues: {
      'celery@py': [celeryQueue('celery')],
      'celery@ts': [celeryQueue('celery'), celeryQueue('video', 'media', 'media.video')],
    },
    active: {
      'celery@py': [request('a', 'celery'), request('b', 'celery')],
      'celery@ts': [request('c', 'media.video', 'media')],
    },
    reserved: {
      'celery@py': [request('d', 'celery')],
      'celery@ts': [request('e', 'celery'), request('f', 'video')],
    },
  }

  it('sums ready, reserved and running per queue over the capacity of the workers consuming it', () => {
    const loads = queueLoads(
      new Map([
        ['celery', 9],
        ['video', 1],
      ]),
      workerViews(replies),
    )
    assert.deepEqual(loads, [
      // 9 ready + 2 reserved + 2 running over 4 + 2 slots.
      { queue: 'celery', ready: 9, reserved: 2, running: 2, capacity: 6, workers: 2, load: 13 / 6 },
      // A task routed by the binding's key (media.video) and one by the queue's own name both count here.
      { queue: 'video', ready: 1, reserved: 1, running: 1, capacity: 2, workers: 1, load: 3 / 2 },
    ])
  })

  it('gives the backlog itself where nothing consumes, so scaling from zero sees work', () => {
    assert.deepEqual(
      queueLoads(
        new Map([
          ['idle', 0],
          ['orphan', 7],
        ]),
        [],
      ),
      [
        { queue: 'idle', ready: 0, reserved: 0, running: 0, capacity: 0, workers: 0, load: 0 },
        { queue: 'orphan', ready: 7, reserved: 0, running: 0, capacity: 0, workers: 0, load: 7 },
      ],
    )
  })

  it('takes an exchange given as a bare name, and a worker whose stats did not come as no capacity', () => {
    const views = workerViews({
      stats: {},
      active_queues: { 'w@1': [{ name: 'q', exchange: 'q', routing_key: 'q' }] },
      active: { 'w@1': [request('x', 'elsewhere')] },
      reserved: {},
    })
    // One queue: what it holds belongs there whatever its routing key says.
    assert.deepEqual(queueLoads(new Map([['q', 0]]), views), [
      { queue: 'q', ready: 0, reserved: 0, running: 1, capacity: 0, workers: 1, load: 1 },
    ])
  })

  it('reads as Prometheus text with a gauge per figure, and as JSON keyed by queue', () => {
    const loads = queueLoads(new Map([['a"b', 2]]), [])
    const text = queueLoadMetrics(loads)
    assert.match(text, /^# HELP tsq_queue_load .+\n# TYPE tsq_queue_load gauge\ntsq_queue_load\{queue="a\\"b"\} 2\n/)
    for (const part of ['ready', 'reserved', 'running', 'capacity', 'workers'])
      assert.match(text, new RegExp(`# TYPE tsq_queue_${part} gauge\\n`))
    assert.deepEqual(queueLoadJson(loads), { queues: { 'a"b': { ready: 2, reserved: 0, running: 0, capacity: 0, workers: 0, load: 2 } } })
  })
})
