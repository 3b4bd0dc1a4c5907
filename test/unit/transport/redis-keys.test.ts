// kombu 5.2.4's Redis names under its transport options (kombu/transport/redis.py:
// global_keyprefix via PrefixedStrictRedis, sep, priority_steps, fanout_prefix,
// fanout_patterns, unacked_*_key) and its queue cycles (kombu/utils/scheduling.py).
// The expected values are what kombu's code computes for the same input.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { RedisKeys } from '../../../src/transport/redis/keys.js'
import { ConsumerSet, ListConsumer } from '../../../src/transport/redis/consume/list-consumers.js'
import { checkTransportOptions } from '../../../src/config/transport-options.js'
import { createApp } from '../../../src/app/app.js'

describe('RedisKeys', () => {
  it("kombu's defaults: bare names, 0x06 0x16, steps 0 3 6 9, /{db}. fanout with patterns", () => {
    const k = new RedisKeys(4)
    assert.equal(k.list('celery', k.step(0)), 'celery')
    assert.equal(k.list('celery', k.step(5)), 'celery\x06\x163')
    assert.deepEqual(k.brpopKeys(['a', 'b']), [
      'a',
      'b',
      'a\x06\x163',
      'b\x06\x163',
      'a\x06\x166',
      'b\x06\x166',
      'a\x06\x169',
      'b\x06\x169',
    ])
    assert.equal(k.binding('celery'), '_kombu.binding.celery')
    assert.deepEqual([k.unacked, k.unackedIndex, k.unackedMutex], ['unacked', 'unacked_index', 'unacked_mutex'])
    assert.equal(k.publishChannel('celery.pidbox', ''), '/4.celery.pidbox')
    assert.equal(k.publishChannel('ev', 'task.x'), '/4.ev/task.x')
    assert.deepEqual(k.subscribePatterns('ev', 'task.#'), ['/4.ev/task.*'])
    assert.equal(k.queueOfList('celery\x06\x169'), 'celery')
  })

  it('[global_keyprefix] every key and channel starts with it (PrefixedStrictRedis and PrefixedRedisPubSub); popped keys lose it', () => {
    const k = new RedisKeys(11, { globalKeyprefix: 'svc:' })
    assert.deepEqual(k.lists('q'), ['svc:q', 'svc:q\x06\x163', 'svc:q\x06\x166', 'svc:q\x06\x169'])
    assert.equal(k.binding('x'), 'svc:_kombu.binding.x')
    assert.deepEqual([k.unacked, k.unackedIndex, k.unackedMutex], ['svc:unacked', 'svc:unacked_index', 'svc:unacked_mutex'])
    assert.equal(k.publishChannel('celery.pidbox', ''), 'svc:/11.celery.pidbox')
    assert.deepEqual(k.subscribePatterns('celery.pidbox', ''), ['svc:/11.celery.pidbox', 'svc:/11.celery.pidbox/*'])
    assert.equal(k.queueOfList('svc:q\x06\x166'), 'q')
    // tsq's own keys stay under the prefix too, so nothing of a prefixed app lands outside it.
    const staging = k.stagingKey('loop1', 'svc:q')
    assert.ok(staging.startsWith('svc:_tsq.claiming.'))
    assert.deepEqual(k.parseStagingKey(staging), ['loop1', 'svc:q'])
    assert.equal(k.parseStagingKey('_tsq.claiming.loop1|q'), undefined)
    assert.equal(k.stagingPattern, 'svc:_tsq.claiming.*')
    // A prefix with glob characters matches itself only.
    assert.deepEqual(new RedisKeys(0, { globalKeyprefix: 'a*[b]:' }).subscribePatterns('e', 'k'), ['a\\*\\[b\\]:/0.e/k'])
  })

  it("[sep, priority_steps] kombu's priority(): steps[bisect(steps, p) - 1] of the clamped priority, Python's index -1 included", () => {
    const k = new RedisKeys(0, { sep: '|', prioritySteps: [0, 5] })
    assert.deepEqual(
      [0, 4, 5, 9, 12, -3, 7.9, '6', 'x', null].map((p) => k.step(p)),
      [0, 0, 5, 5, 5, 0, 5, 5, 0, 0],
    )
    assert.deepEqual(k.brpopKeys(['q']), ['q', 'q|5'])
    assert.equal(k.bindingMember({ routingKey: 'a.*', pattern: '^a$', queue: 'q' }), 'a.*|^a$|q')
    assert.deepEqual(k.parseBindingMember('a.*|^a$|q'), { routingKey: 'a.*', pattern: '^a$', queue: 'q' })
    // Steps that do not start at 0: a priority below the first goes to the last step (bisect gives 0, index -1).
    const odd = new RedisKeys(0, { prioritySteps: [1, 5, 9] })
    assert.deepEqual(
      [0, 1, 6, 9].map((p) => odd.step(p)),
      [9, 1, 5, 9],
    )
    assert.deepEqual(odd.lists('q'), ['q\x06\x161', 'q\x06\x165', 'q\x06\x169'])
  })

  it('[fanout_prefix, fanout_patterns] a string prefix ({db} formatted), none, and the exchange name alone', () => {
    const custom = new RedisKeys(3, { fanoutPrefix: '/app{db}.', fanoutPatterns: false })
    assert.equal(custom.publishChannel('celery.pidbox', 'x'), '/app3.celery.pidbox')
    assert.deepEqual(custom.subscribePatterns('celery.pidbox', '#'), ['/app3.celery.pidbox'])
    const none = new RedisKeys(3, { fanoutPrefix: false })
    assert.equal(none.publishChannel('ev', 'k'), 'ev/k')
  })

  it('[unacked_key, unacked_index_key, unacked_mutex_key] renamed, under the prefix', () => {
    const k = new RedisKeys(0, { globalKeyprefix: 'p.', unackedKey: 'u', unackedIndexKey: 'ui', unackedMutexKey: 'um' })
    assert.deepEqual([k.unacked, k.unackedIndex, k.unackedMutex], ['p.u', 'p.ui', 'p.um'])
  })
})

describe("[queue_order_strategy] kombu's cycles", () => {
  const hooks = { cancel: async () => undefined, changed: () => undefined }
  function set(strategy: 'round_robin' | 'priority' | 'sorted'): ConsumerSet {
    const s = new ConsumerSet(strategy)
    for (const q of ['b', 'c', 'a']) s.add(new ListConsumer(q, q, () => undefined, 0, false, hooks))
    return s
  }
  it('round_robin: the queue just served goes last', () => {
    const s = set('round_robin')
    s.rotate('b')
    assert.deepEqual(s.ready(), ['c', 'a', 'b'])
  })
  it('priority: the order the queues were consumed in, always', () => {
    const s = set('priority')
    s.rotate('b')
    assert.deepEqual(s.ready(), ['b', 'c', 'a'])
  })
  it('sorted: by name, always', () => {
    const s = set('sorted')
    s.rotate('a')
    assert.deepEqual(s.ready(), ['a', 'b', 'c'])
  })
})

describe("[broker_transport_options] the Redis layout from an app's conf", () => {
  it('each option read into the layout; bad values refused with one line each', () => {
    const opts = {
      global_keyprefix: 'svc:',
      sep: '|',
      priority_steps: [0, 5],
      queue_order_strategy: 'priority',
      fanout_prefix: '/x{db}.',
      fanout_patterns: false,
      unacked_key: 'u',
    }
    assert.deepEqual(checkTransportOptions(opts), {
      redisLayout: {
        globalKeyprefix: 'svc:',
        sep: '|',
        prioritySteps: [0, 5],
        queueOrderStrategy: 'priority',
        fanoutPrefix: '/x{db}.',
        fanoutPatterns: false,
        unackedKey: 'u',
      },
      redisLiveness: {},
      refusals: [],
    })
    assert.deepEqual(
      checkTransportOptions({
        global_keyprefix: 3,
        sep: '',
        priority_steps: [],
        queue_order_strategy: 'myproj.Cycle',
        fanout_patterns: 'yes',
        ack_emulation: false,
      }).refusals,
      [
        'broker_transport_options.global_keyprefix = ********: expected a string',
        'broker_transport_options.sep = "": expected a non-empty string',
        'broker_transport_options.priority_steps = []: expected a list of whole numbers >= 0',
        'broker_transport_options.queue_order_strategy = "myproj.Cycle": expected one of round_robin, priority, sorted (a Python cycle class cannot be used here)',
        'broker_transport_options.fanout_patterns = "yes": expected true or false',
        "broker_transport_options.ack_emulation = false: tsq keeps kombu's default (true), so another value would split its Redis layout from the Python workers'",
      ],
    )
  })
  it("an app's conf reaches the transport settings every command uses", () => {
    const app = createApp({ name: 'proj', conf: { broker_transport_options: { global_keyprefix: 'svc:', visibility_timeout: 60 } } })
    assert.deepEqual(app.transportSettings, { visibilityTimeout: 60, redisLayout: { globalKeyprefix: 'svc:' } })
  })
})
