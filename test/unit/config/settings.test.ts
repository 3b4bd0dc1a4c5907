import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { refusals, settingsRefusals } from '../../../src/config/settings.js'
import { checkTransportOptions } from '../../../src/config/transport-options.js'
import { annotationsFor } from '../../../src/config/annotations.js'
import { queueDefinition, queueSettings } from '../../../src/config/queues.js'
import { resolveWorkerSettings } from '../../../src/worker/worker-settings.js'
import { createApp } from '../../../src/app/app.js'

describe('precedence: flag > env > conf > default', () => {
  const conf = {
    worker_concurrency: 3,
    worker_prefetch_multiplier: 1,
    worker_pool: 'threads',
    worker_max_tasks_per_child: 50,
    worker_send_task_events: true,
    worker_state_db: '/tmp/w.db',
  }
  const env = { CELERY_WORKER_CONCURRENCY: '5', CELERY_WORKER_POOL: 'solo', CELERY_WORKER_PREFETCH_MULTIPLIER: '2' }

  it('[worker_concurrency] the flag wins over env and conf', () => {
    const s = resolveWorkerSettings({ concurrency: 7 }, conf, env, 2)
    assert.deepEqual(s.concurrency, { value: 7, source: 'flag' })
  })
  it('[worker_concurrency] CELERY_WORKER_CONCURRENCY wins over conf', () => {
    assert.deepEqual(resolveWorkerSettings({}, conf, env, 2).concurrency, { value: 5, source: 'env' })
  })
  it('[worker_concurrency] conf wins over the CPU count', () => {
    assert.deepEqual(resolveWorkerSettings({}, conf, {}, 2).concurrency, { value: 3, source: 'conf' })
  })
  it('[worker_concurrency] the default is the CPU count', () => {
    assert.deepEqual(resolveWorkerSettings({}, {}, {}, 2).concurrency, { value: 2, source: 'default' })
  })
  it('[worker_pool] -P > CELERY_WORKER_POOL > conf > prefork; processes is prefork', () => {
    assert.equal(resolveWorkerSettings({ pool: 'prefork' }, conf, env, 1).pool.value, 'prefork')
    assert.equal(resolveWorkerSettings({}, conf, env, 1).pool.value, 'solo')
    assert.equal(resolveWorkerSettings({}, conf, {}, 1).pool.value, 'threads')
    assert.equal(resolveWorkerSettings({}, { worker_pool: 'processes' }, {}, 1).pool.value, 'prefork')
    assert.deepEqual(resolveWorkerSettings({}, {}, {}, 1).pool, { value: 'prefork', source: 'default' })
  })
  it('[worker_prefetch_multiplier] 0 from a flag is a value, not absence', () => {
    assert.deepEqual(resolveWorkerSettings({ prefetchMultiplier: 0 }, conf, env, 1).prefetchMultiplier, { value: 0, source: 'flag' })
    assert.deepEqual(resolveWorkerSettings({}, conf, env, 1).prefetchMultiplier, { value: 2, source: 'env' })
    assert.deepEqual(resolveWorkerSettings({}, {}, {}, 1).prefetchMultiplier, { value: 4, source: 'default' })
  })
  it('[worker_send_task_events] -E absent leaves it to the conf; CELERY_WORKER_TASK_EVENTS reads as click does', () => {
    assert.deepEqual(resolveWorkerSettings({ taskEvents: false }, conf, {}, 1).taskEvents, { value: true, source: 'conf' })
    assert.deepEqual(resolveWorkerSettings({ taskEvents: false }, conf, { CELERY_WORKER_TASK_EVENTS: 'no' }, 1).taskEvents, {
      value: false,
      source: 'env',
    })
    assert.deepEqual(resolveWorkerSettings({ taskEvents: true }, {}, { CELERY_WORKER_TASK_EVENTS: '0' }, 1).taskEvents, {
      value: true,
      source: 'flag',
    })
  })
  it('[worker_state_db, worker_max_tasks_per_child] conf below the flag', () => {
    const s = resolveWorkerSettings({ statedb: null }, conf, {}, 1)
    assert.deepEqual(s.statedb, { value: '/tmp/w.db', source: 'conf' })
    assert.deepEqual(s.maxTasksPerChild, { value: 50, source: 'conf' })
    assert.deepEqual(resolveWorkerSettings({ maxTasksPerChild: 9 }, conf, {}, 1).maxTasksPerChild, { value: 9, source: 'flag' })
  })
  it('bad values get one line naming where they came from', () => {
    assert.throws(() => resolveWorkerSettings({}, {}, { CELERY_WORKER_CONCURRENCY: 'many' }, 1), {
      message: 'CELERY_WORKER_CONCURRENCY = "many": expected a whole number >= 1',
    })
    assert.throws(() => resolveWorkerSettings({}, { worker_concurrency: 0 }, {}, 1), {
      message: 'worker_concurrency = 0: expected a whole number >= 1',
    })
    assert.throws(() => resolveWorkerSettings({}, { worker_pool: 'eventlet' }, {}, 1), {
      code: 'CONFIG',
      message: `worker_pool = "eventlet": tsq's pools are prefork (processes), threads and solo`,
    })
  })
  it('[broker_url, result_backend] flag > CELERY_* env > conf', () => {
    const saved = { b: process.env.CELERY_BROKER_URL, t: process.env.TSQ_BROKER_URL }
    delete process.env.TSQ_BROKER_URL
    try {
      const app = createApp({ conf: { broker_url: 'redis://127.0.0.1:6379/11', result_backend: 'redis://127.0.0.1:6379/12' } })
      delete process.env.CELERY_BROKER_URL
      assert.equal(app.config.brokerUrl, 'redis://127.0.0.1:6379/11')
      assert.equal(app.config.brokerSource, 'app')
      process.env.CELERY_BROKER_URL = 'amqp://env'
      assert.equal(app.config.brokerUrl, 'amqp://env')
      app.configure({ broker: 'amqp://flag' })
      assert.equal(app.config.brokerUrl, 'amqp://flag')
    } finally {
      if (saved.b === undefined) delete process.env.CELERY_BROKER_URL
      else process.env.CELERY_BROKER_URL = saved.b
      if (saved.t !== undefined) process.env.TSQ_BROKER_URL = saved.t
    }
  })
})

describe('refusal lines', () => {
  it("a refused setting set to another value than Celery's default: one line naming it and why", () => {
    assert.deepEqual(refusals({ worker_pool: 'eventlet' }), [
      'worker_pool = "eventlet": tsq\'s pools are prefork, threads and solo (not eventlet)',
    ])
    assert.deepEqual(refusals({ task_serializer: 'pickle' }), [
      'task_serializer = "pickle": pickle is never decoded by tsq (it would run code from the message)',
    ])
    assert.deepEqual(refusals({ broker_connection_max_retries: 5 }), [
      'broker_connection_max_retries = 5: tsq retries a lost connection without a limit',
    ])
    assert.deepEqual(refusals({ database_engine_options: { echo: true } }), [
      'database_engine_options = {"echo":true}: SQLAlchemy engine options are Python-only; tsq pools with pg, mysql2 and better-sqlite3 and takes none of them',
    ])
    assert.deepEqual(refusals({ database_url: 'sqlite:///x.db' }), [])
  })
  it("restating Celery's default is accepted, for refused settings too", () => {
    assert.deepEqual(
      refusals({
        worker_pool: 'prefork',
        broker_connection_max_retries: 100,
        task_serializer: 'json',
        accept_content: ['json'],
        enable_utc: true,
        result_backend_max_retries: Infinity,
        task_publish_retry_policy: { max_retries: 3, interval_start: 0, interval_max: 1, interval_step: 0.2 },
      }),
      [],
    )
  })
  it('honoured and not-applicable settings and names Celery does not have are never refused', () => {
    assert.deepEqual(
      refusals({ worker_hijack_root_logger: false, task_queue_max_priority: 10, lock_url: 'redis://x', worker_concurrency: 4 }),
      [],
    )
  })
  it('[accept_content] json, msgpack, yaml and auth by name or content type; pickle never', () => {
    assert.deepEqual(refusals({ accept_content: ['json', 'pickle'] }), [
      'accept_content = ["json","pickle"]: pickle is never decoded by tsq (it would run code from the message)',
    ])
    assert.deepEqual(refusals({ accept_content: ['json', 'bson'] }), [
      'accept_content = ["json","bson"]: tsq takes json, msgpack, yaml, auth (not bson)',
    ])
    assert.deepEqual(refusals({ accept_content: ['application/json', 'msgpack', 'application/x-yaml', 'auth'] }), [])
    assert.deepEqual(
      refusals({ task_serializer: 'auth', result_serializer: 'msgpack', result_accept_content: ['json', 'application/x-msgpack'] }),
      [],
    )
    assert.deepEqual(refusals({ result_serializer: 'auth' }), ['result_serializer = "auth": tsq encodes json, msgpack, yaml (not auth)'])
  })
  it("[broker_transport_options] kombu's layout options read (tested in redis-keys.test.ts), what tsq cannot do refused by key", () => {
    assert.deepEqual(
      checkTransportOptions({ visibility_timeout: 60, sep: '\x06\x16', queue_order_strategy: 'round_robin', socket_timeout: 5 }),
      {
        visibilityTimeout: 60,
        redisLayout: { sep: '\x06\x16', queueOrderStrategy: 'round_robin' },
        redisLiveness: { socketTimeout: 5 },
        refusals: [],
      },
    )
    // confirm_publish: tsq's RabbitMQ publishes always wait for the confirm (an events app sets it).
    assert.deepEqual(refusals({ broker_transport_options: { confirm_publish: true } }), [])
    assert.deepEqual(
      refusals({
        broker_transport_options: { priority_steps: [0, 1, 2], global_keyprefix: 'svc:', body_encoding: 'plain', max_retries: 3 },
      }),
      [
        'broker_transport_options.body_encoding = "plain": tsq keeps kombu\'s default ("base64"), so another value would split its Redis layout from the Python workers\'',
        "broker_transport_options.max_retries = 3: not an option tsq's transports read",
      ],
    )
    assert.deepEqual(refusals({ broker_transport_options: { visibility_timeout: -1 } }), [
      'broker_transport_options.visibility_timeout = -1: expected seconds > 0',
    ])
  })
  it('[task_annotations] attributes tsq has no option for are refused', () => {
    assert.deepEqual(refusals({ task_annotations: { 'tasks.add': { rate_limit: '10/s', on_failure: 'x' } } }), [
      'task_annotations["tasks.add"].on_failure: tsq annotates rate_limit, rate_limit_scope, time_limit, soft_time_limit, acks_late, ignore_result, track_started, max_retries, default_retry_delay, reject_on_worker_lost, acks_on_failure_or_timeout only',
    ])
    assert.deepEqual(refusals({ task_annotations: ['proj.annotations.MyAnnotate'] }), [
      'task_annotations: "proj.annotations.MyAnnotate" is not a map of task name to attributes (a Python class cannot be used here)',
    ])
  })
  it('[task_queues] an entry tsq cannot read is refused at start-up', () => {
    assert.deepEqual(settingsRefusals({ task_queues: [{ name: 'q', exchange: { name: 'x', type: 'headers' } }] }, 'celery'), [
      'task_queues["q"]: exchange type "headers" is not direct, topic or fanout',
    ])
    assert.deepEqual(settingsRefusals({ task_queue_max_priority: 300 }, 'celery'), [
      'task_queue_max_priority = 300: expected a whole number from 0 to 255',
    ])
  })
})

describe('queues as Celery declares them (app.amqp.Queues)', () => {
  it('[task_queues] exchange, type, routing key, queue_arguments, consumer_arguments and flags', () => {
    const s = queueSettings(
      {
        task_queues: [
          {
            name: 'prio',
            exchange: 'prio',
            routing_key: 'prio',
            queue_arguments: { 'x-max-priority': 10 },
            consumer_arguments: { 'x-priority': 5 },
          },
          { name: 'jobs', exchange: { name: 'jobs', type: 'topic' }, routing_key: 'jobs.#', durable: false, exclusive: true },
        ],
      },
      'celery',
    )
    const prio = queueDefinition(s, 'prio')
    assert.deepEqual(prio.queue, { name: 'prio', durable: true, exclusive: false, autoDelete: false, arguments: { 'x-max-priority': 10 } })
    assert.deepEqual(prio.exchange, { name: 'prio', type: 'direct', durable: true, autoDelete: false })
    assert.deepEqual(prio.consumerArguments, { 'x-priority': 5 })
    const jobs = queueDefinition(s, 'jobs')
    // kombu: exclusive implies auto_delete.
    assert.deepEqual(jobs.queue, { name: 'jobs', durable: false, exclusive: true, autoDelete: true })
    // A Queue's own flags are not its exchange's (only Queue.from_dict shares them).
    assert.deepEqual(jobs.bindings, [{ exchange: { name: 'jobs', type: 'topic', durable: true, autoDelete: false }, routingKey: 'jobs.#' }])
    const mapped = queueDefinition(
      queueSettings({ task_queues: { jobs: { exchange: 'jobs', exchange_type: 'topic', durable: false } } }, 'celery'),
      'jobs',
    )
    assert.deepEqual(mapped.exchange, { name: 'jobs', type: 'topic', durable: false, autoDelete: false })
  })
  it('[task_queues] two bindings on one topic exchange', () => {
    const s = queueSettings(
      {
        task_queues: [
          {
            name: 'both',
            bindings: [
              { exchange: { name: 't', type: 'topic' }, routing_key: 'a.*' },
              { exchange: { name: 't', type: 'topic' }, routing_key: 'b.*' },
            ],
          },
        ],
      },
      'celery',
    )
    assert.deepEqual(
      queueDefinition(s, 'both').bindings.map((b) => `${b.exchange.name}:${b.exchange.type}:${b.routingKey}`),
      ['t:topic:a.*', 't:topic:b.*'],
    )
  })
  it('[task_queue_max_priority] added to every queue that has no x-max-priority, created ones too', () => {
    const s = queueSettings(
      { task_queue_max_priority: 10, task_queues: [{ name: 'a', queue_arguments: { 'x-max-priority': 3 } }, { name: 'b' }] },
      'celery',
    )
    assert.equal(queueDefinition(s, 'a').queue.arguments?.['x-max-priority'], 3)
    assert.equal(queueDefinition(s, 'b').queue.arguments?.['x-max-priority'], 10)
    assert.equal(queueDefinition(s, 'other').queue.arguments?.['x-max-priority'], 10)
  })
  it('[task_default_exchange, task_default_exchange_type, task_default_routing_key] shape the default queue', () => {
    const d = queueDefinition(
      queueSettings(
        { task_default_exchange: 'tasks', task_default_exchange_type: 'topic', task_default_routing_key: 'task.default' },
        'work',
      ),
      'work',
    )
    assert.deepEqual([d.exchange.name, d.exchange.type, d.routingKey], ['tasks', 'topic', 'task.default'])
    // With none set: Queue('celery', Exchange('celery'), 'celery').
    const c = queueDefinition(queueSettings({}, 'celery'), 'celery')
    assert.deepEqual([c.exchange.name, c.exchange.type, c.routingKey, c.queue.arguments], ['celery', 'direct', 'celery', undefined])
  })
  it("[task_queues] a list entry without a routing key takes task_default_routing_key (the default queue's name); the map form takes its own name", () => {
    assert.equal(queueDefinition(queueSettings({ task_queues: [{ name: 'x', exchange: 'x' }] }, 'celery'), 'x').routingKey, 'celery')
    assert.equal(queueDefinition(queueSettings({ task_queues: { x: { exchange: 'x' } } }, 'celery'), 'x').routingKey, 'x')
  })
  it('[task_create_missing_queues] False: a queue task_queues lacks is refused', () => {
    const s = queueSettings({ task_create_missing_queues: false, task_queues: [{ name: 'only' }] }, 'celery')
    assert.equal(queueDefinition(s, 'only').queue.name, 'only')
    assert.throws(() => queueDefinition(s, 'nope'), {
      message: 'queue "nope" is not in task_queues and task_create_missing_queues is False',
    })
  })
  it('[task_default_delivery_mode] transient and persistent', () => {
    assert.equal(queueSettings({ task_default_delivery_mode: 'transient' }, 'celery').defaultDeliveryMode, 1)
    assert.equal(queueSettings({}, 'celery').defaultDeliveryMode, 2)
    assert.throws(() => queueSettings({ task_default_delivery_mode: 3 }, 'celery'), /task_default_delivery_mode = 3/)
  })
})

describe('[task_annotations] as resolve_all applies them', () => {
  it("the first map naming the task, then the first '*' over it", () => {
    const annotations = [
      { 'tasks.add': { rate_limit: '10/s', time_limit: 5 } },
      { 'tasks.add': { rate_limit: '1/s' }, '*': { time_limit: 9 } },
    ]
    assert.deepEqual(annotationsFor(annotations, 'tasks.add'), { rateLimit: '10/s', timeLimit: 9 })
    assert.deepEqual(annotationsFor(annotations, 'tasks.other'), { timeLimit: 9 })
    assert.deepEqual(annotationsFor(undefined, 'tasks.add'), {})
  })
  it("win over the options given to app.task(), as over a Task's attributes", () => {
    const app = createApp({ conf: { task_annotations: { 'tasks.add': { rate_limit: '2/m' } } } })
    const add = app.task('tasks.add', (a: number, b: number) => a + b, { rateLimit: '100/s' })
    assert.equal(add.options.rateLimit, '2/m')
  })
})

describe('[task_queues] bindings', () => {
  it('a queue given as bindings is sent to through the default exchange, by its name, as Celery does', () => {
    const d = queueDefinition(
      queueSettings(
        { task_queues: [{ name: 'both', bindings: [{ exchange: { name: 't', type: 'topic' }, routing_key: 'a.*' }] }] },
        'celery',
      ),
      'both',
    )
    assert.deepEqual([d.exchange.name, d.exchange.type, d.routingKey], ['', 'direct', 'both'])
  })
})
