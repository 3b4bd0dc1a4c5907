// The dashboard's HTTP API on the embedded file:// broker, fed with events as
// the receiver delivers them: Flower's REST responses compared, key by key and
// type by type, with the responses Flower documents (written here from its
// docstrings, flower/api/*.py), /metrics read by a Prometheus text-format
// parser, the security rules, --persistent, and bad input of every kind.
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { mkdtempSync, writeFileSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import { Cluster } from '../../../src/dashboard/cluster.js'
import { DashboardServer } from '../../../src/dashboard/server.js'

/** Flower's documented example responses (flower/api/tasks.py, workers.py, control.py docstrings). */
const FLOWER_EXAMPLES = {
  'api/tasks entry': {
    args: '[3, 4]',
    client: null,
    clock: 1079,
    eta: null,
    exception: null,
    exchange: null,
    expires: null,
    failed: null,
    kwargs: '{}',
    name: 'tasks.add',
    received: 1398505411.107885,
    result: "'7'",
    retried: null,
    retries: 0,
    revoked: null,
    routing_key: null,
    runtime: 0.01610181899741292,
    sent: null,
    started: 1398505411.108985,
    state: 'SUCCESS',
    succeeded: 1398505411.124802,
    timestamp: 1398505411.124802,
    traceback: null,
    uuid: 'e42ceb2d-8730-47b5-8b4d-8e0d2a1ef7c9',
    worker: 'celery@worker1',
  },
  'api/task/info': {
    args: '[2, 2]',
    client: null,
    clock: 25,
    eta: null,
    exception: null,
    exchange: null,
    expires: null,
    failed: null,
    kwargs: '{}',
    name: 'tasks.add',
    received: 1400806241.970742,
    result: "'4'",
    retried: null,
    retries: null,
    revoked: null,
    routing_key: null,
    runtime: 2.0037889280356467,
    sent: null,
    started: 1400806241.972624,
    state: 'SUCCESS',
    succeeded: 1400806243.975336,
    'task-id': '91396550-c228-4111-9da4-9d88cfd5ddc6',
    timestamp: 1400806243.975336,
    traceback: null,
    worker: 'celery@worker1',
  },
  'api/task/types': { 'task-types': ['tasks.add', 'tasks.sleep'] },
  'api/queues/length': {
    active_queues: [
      { name: 'celery', messages: 0 },
      { name: 'video-queue', messages: 5 },
    ],
  },
  'api/task/revoke': { message: "Revoked '1480b55c-b8b2-462c-985e-24af3e9158f9'" },
  'api/workers entry': {
    active_queues: [{ name: 'celery', routing_key: 'celery' }],
    conf: {},
    registered: ['tasks.add'],
    stats: { pid: 90494, pool: { 'max-concurrency': 4 }, prefetch_count: 16 },
    timestamp: 1438049312.073402,
  },
} as const

/** Types where the example had a value; null in the example matches anything (Flower writes null until an event sets it). */
function assertSameShape(actual: Record<string, unknown>, example: Record<string, unknown>, what: string): void {
  for (const [key, value] of Object.entries(example)) {
    assert.ok(key in actual, `${what}: missing key '${key}' (have ${Object.keys(actual).join(', ')})`)
    if (value === null || actual[key] === null) continue
    const type = (v: unknown) => (Array.isArray(v) ? 'array' : typeof v)
    assert.equal(type(actual[key]), type(value), `${what}.${key}: ${JSON.stringify(actual[key])} vs ${JSON.stringify(value)}`)
  }
}

interface Reply {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

function call(
  base: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method: options.method ?? 'GET', headers: options.headers, agent: false }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (d) => (body += d))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
    })
    req.on('error', reject)
    req.end(options.body)
  })
}

let now = Date.now() / 1000
function event(type: string, fields: Record<string, unknown>): Record<string, unknown> {
  now += 0.01
  return { type, hostname: 'celery@worker1', timestamp: now, local_received: now, clock: Math.round(now), utcoffset: 0, pid: 1, ...fields }
}

describe('dashboard HTTP API (file:// broker)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-dash-api-'))
  const db = join(dir, 'state.json')
  let cluster: Cluster
  let server: DashboardServer
  let base = ''

  before(async () => {
    writeFileSync(join(dir, 'flower-examples.json'), JSON.stringify(FLOWER_EXAMPLES, null, 2))
    cluster = new Cluster({
      brokerUrl: `file://${join(dir, 'broker')}`,
      maxTasks: 1000,
      persistent: { path: db },
      queues: ['celery'],
      queueInterval: 1,
    })
    await cluster.start()
    // A message waiting in `celery`, for the queue depth.
    await cluster.sendTask('tasks.add', [1, 2], {})
    server = new DashboardServer({ cluster, port: 0, address: '127.0.0.1' })
    base = (await server.listen()).url.replace(/\/$/, '')
    cluster.onEvent(
      event('worker-online', {
        freq: 2,
        sw_ident: 'py-celery',
        sw_ver: '5.2.6',
        sw_sys: 'Linux',
        active: 0,
        processed: 0,
        loadavg: [0.1, 0.2, 0.3],
      }),
    )
    cluster.onEvent(
      event('task-received', {
        uuid: 'e42ceb2d-8730-47b5-8b4d-8e0d2a1ef7c9',
        name: 'tasks.add',
        args: '[3, 4]',
        kwargs: '{}',
        retries: 0,
        eta: null,
        expires: null,
        root_id: 'e42ceb2d-8730-47b5-8b4d-8e0d2a1ef7c9',
        parent_id: null,
      }),
    )
    cluster.onEvent(event('task-started', { uuid: 'e42ceb2d-8730-47b5-8b4d-8e0d2a1ef7c9' }))
    cluster.onEvent(event('task-succeeded', { uuid: 'e42ceb2d-8730-47b5-8b4d-8e0d2a1ef7c9', result: "'7'", runtime: 0.016 }))
    cluster.onEvent(
      event('task-received', { uuid: 'f00', name: 'tasks.sleep', args: '[10]', kwargs: "{'why': '<b>x</b>'}", retries: 0, root_id: 'f00' }),
    )
    // What Flower's Inspector stores per worker, here as a worker would answer (with a password to scrub).
    const worker = cluster.state.workers.get('celery@worker1')!
    Object.assign(worker.inspect, {
      stats: { pid: 90494, pool: { 'max-concurrency': 4 }, prefetch_count: 16, broker: { userid: 'guest', password: 'hunter2' } },
      active_queues: [{ name: 'celery', routing_key: 'celery' }],
      registered: ['tasks.add'],
      conf: { broker_url: 'amqp://guest:hunter2@127.0.0.1:5672//' },
      timestamp: now,
    })
  })

  after(async () => {
    await server.close()
    await cluster.stop()
  })

  it("GET /api/tasks: {uuid: task} with every key of Flower's example, same types; limit, sort_by, state, search", async () => {
    const res = await call(base, '/api/tasks')
    assert.equal(res.status, 200)
    assert.match(String(res.headers['content-type']), /application\/json/)
    const body = JSON.parse(res.body) as Record<string, Record<string, unknown>>
    const example = JSON.parse(readFileSync(join(dir, 'flower-examples.json'), 'utf8')) as typeof FLOWER_EXAMPLES
    assertSameShape(body['e42ceb2d-8730-47b5-8b4d-8e0d2a1ef7c9']!, example['api/tasks entry'], 'api/tasks')
    assert.equal(body['e42ceb2d-8730-47b5-8b4d-8e0d2a1ef7c9']!.worker, 'celery@worker1')
    assert.deepEqual(Object.keys(JSON.parse((await call(base, '/api/tasks?limit=1&sort_by=name')).body)), [
      'e42ceb2d-8730-47b5-8b4d-8e0d2a1ef7c9',
    ])
    assert.deepEqual(Object.keys(JSON.parse((await call(base, '/api/tasks?state=RECEIVED&workername=All')).body)), ['f00'])
    assert.deepEqual(Object.keys(JSON.parse((await call(base, `/api/tasks?search=${encodeURIComponent('kwargs:why=<b>x</b>')}`)).body)), [
      'f00',
    ])
    assert.deepEqual(Object.keys(JSON.parse((await call(base, '/api/tasks?taskname=tasks.add&offset=1')).body)), [])
  })

  it("GET /api/task/info/<id>, /api/task/types, /api/queues/length, /api/workers: Flower's shapes", async () => {
    const info = JSON.parse((await call(base, '/api/task/info/e42ceb2d-8730-47b5-8b4d-8e0d2a1ef7c9')).body) as Record<string, unknown>
    assertSameShape(info, FLOWER_EXAMPLES['api/task/info'], 'api/task/info')
    assert.equal(info['task-id'], 'e42ceb2d-8730-47b5-8b4d-8e0d2a1ef7c9')
    assert.equal((await call(base, '/api/task/info/nope')).status, 404)
    const types = JSON.parse((await call(base, '/api/task/types')).body) as Record<string, unknown>
    assert.deepEqual(types, FLOWER_EXAMPLES['api/task/types'])
    const queues = JSON.parse((await call(base, '/api/queues/length')).body) as { active_queues: Record<string, unknown>[] }
    assert.deepEqual(
      queues.active_queues.find((q) => q.name === 'celery'),
      { name: 'celery', messages: 1 },
    )
    for (const q of queues.active_queues) assertSameShape(q, FLOWER_EXAMPLES['api/queues/length'].active_queues[0], 'queues/length')
    const workers = JSON.parse((await call(base, '/api/workers')).body) as Record<string, Record<string, unknown>>
    assertSameShape(workers['celery@worker1']!, FLOWER_EXAMPLES['api/workers entry'], 'api/workers')
    assert.deepEqual(JSON.parse((await call(base, '/api/workers?status=1')).body), { 'celery@worker1': true })
    assert.equal((await call(base, '/api/workers?workername=celery@nobody')).status, 404)
  })

  it("POST /api/task/revoke/<id>: Flower's message; state-changing paths refuse GET and cross-site POSTs; a wrong method is 405 with Allow", async () => {
    const revoked = await call(base, '/api/task/revoke/1480b55c-b8b2-462c-985e-24af3e9158f9?terminate=true', { method: 'POST' })
    assert.equal(revoked.status, 200)
    assert.deepEqual(JSON.parse(revoked.body), FLOWER_EXAMPLES['api/task/revoke'])
    assert.equal((await call(base, '/api/task/revoke/x')).status, 405)
    assert.equal((await call(base, '/api/worker/shutdown/celery@worker1')).status, 405)
    assert.equal((await call(base, '/api/task/revoke/x', { method: 'POST', headers: { Origin: 'http://evil.example' } })).status, 403)
    assert.equal((await call(base, '/api/task/revoke/x', { method: 'POST', headers: { 'Sec-Fetch-Site': 'cross-site' } })).status, 403)
    assert.equal((await call(base, '/api/worker/pool/grow/celery@nobody', { method: 'POST' })).status, 404)
    assert.equal((await call(base, '/api/task/revoke/x', { method: 'DELETE' })).status, 405)
    // Asked with a method its route does not take, a path answers 405 naming the one it does, as Flower's tornado does.
    for (const path of ['/api/tasks', '/api/workers', '/api/task/info/x']) {
      const wrong = await call(base, path, { method: 'POST' })
      assert.deepEqual([wrong.status, wrong.headers.allow], [405, 'GET, HEAD'], path)
    }
    assert.equal((await call(base, '/api/task/revoke/x')).headers.allow, 'POST')
  })

  it('a 403 page escapes the worker name and the reason it echoes', async () => {
    const name = '<img src=x onerror=alert(1)>@w'
    cluster.onEvent(event('worker-online', { hostname: name, freq: 2, active: 0, processed: 0, loadavg: [0, 0, 0] }))
    const broadcast = cluster.broadcast
    cluster.broadcast = async () => [{ [name]: { error: '<script>alert(2)</script>' } }]
    try {
      const res = await call(base, `/api/worker/pool/grow/${encodeURIComponent(name)}`, { method: 'POST' })
      assert.equal(res.status, 403)
      assert.equal(
        res.body,
        'Failed to grow &#39;&#60;img src=x onerror=alert(1)&#62;@w&#39; worker&#39;s pool: &#60;script&#62;alert(2)&#60;/script&#62;',
      )
    } finally {
      cluster.broadcast = broadcast
    }
  })

  it('--allowed-hosts: the names given are answered, others get 421', async () => {
    const named = new DashboardServer({ cluster, port: 0, address: '127.0.0.1', allowedHosts: ['dash.example', 'ops.example'] })
    const url = (await named.listen()).url.replace(/\/$/, '')
    try {
      for (const host of ['dash.example', 'ops.example:8080', `127.0.0.1:${new URL(url).port}`])
        assert.equal((await call(url, '/api/tasks', { headers: { Host: host } })).status, 200, host)
      assert.equal((await call(url, '/api/tasks', { headers: { Host: 'evil.example' } })).status, 421)
      assert.equal((await call(url, '/healthcheck', { headers: { Host: 'evil.example' } })).status, 421)
      // The page's own origin on an allowed name may act.
      assert.equal(
        (await call(url, '/api/task/revoke/x', { method: 'POST', headers: { Host: 'dash.example', Origin: 'http://dash.example' } }))
          .status,
        200,
      )
    } finally {
      await named.close()
    }
  })

  it("GET /metrics parses as Prometheus text with Flower's metric names and labels, and queue gauges", async () => {
    await new Promise((r) => setTimeout(r, 1500))
    const res = await call(base, '/metrics')
    assert.equal(res.status, 200)
    const families = parsePrometheusTextFormat(res.body)
    const byName = new Map(families.map((f) => [f.name, f]))
    for (const [name, type] of [
      ['flower_events_total', 'COUNTER'],
      ['flower_task_runtime_seconds', 'HISTOGRAM'],
      ['flower_task_prefetch_time_seconds', 'GAUGE'],
      ['flower_worker_prefetched_tasks', 'GAUGE'],
      ['flower_worker_online', 'GAUGE'],
      ['flower_worker_number_of_currently_executing_tasks', 'GAUGE'],
      ['tsq_queue_messages', 'GAUGE'],
    ] as const) {
      assert.equal(byName.get(name)?.type, type, `${name} missing or not a ${type}`)
    }
    const events = byName.get('flower_events_total')!.metrics
    assert.ok(
      events.some(
        (m) =>
          m.labels?.worker === 'celery@worker1' && m.labels?.type === 'task-succeeded' && m.labels?.task === 'tasks.add' && m.value === '1',
      ),
    )
    assert.ok(byName.get('flower_worker_online')!.metrics.some((m) => m.labels?.worker === 'celery@worker1' && m.value === '1'))
    assert.ok(byName.get('tsq_queue_messages')!.metrics.some((m) => m.labels?.queue === 'celery' && m.value === '1'))
  })

  it('no password reaches a response; basic auth guards everything but /healthcheck', async () => {
    for (const path of ['/api/workers', '/api/ui/worker/celery%40worker1', '/api/ui/summary']) {
      const body = (await call(base, path)).body
      assert.equal(body.includes('hunter2'), false, path)
    }
    const guarded = new DashboardServer({
      cluster,
      port: 0,
      address: '127.0.0.1',
      basicAuth: [{ user: 'a', pass: 'b' }],
      urlPrefix: '/flower',
    })
    const url = (await guarded.listen()).url.replace(/\/$/, '')
    try {
      assert.equal((await call(url, '/api/tasks')).status, 401)
      assert.equal((await call(url, '/metrics')).status, 401)
      assert.equal((await call(url, '/api/ui/stream')).status, 401)
      assert.equal(
        (await call(url, '/api/tasks', { headers: { Authorization: `Basic ${Buffer.from('a:wrong').toString('base64')}` } })).status,
        401,
      )
      assert.equal(
        (await call(url, '/api/tasks', { headers: { Authorization: `Basic ${Buffer.from('a:b').toString('base64')}` } })).status,
        200,
      )
      assert.equal((await call(url, '/healthcheck')).body, 'OK')
      assert.equal((await call(url.replace(/\/flower$/, ''), '/api/tasks')).status, 404)
    } finally {
      await guarded.close()
    }
  })

  it('bad input: query errors are one JSON line with 400; malformed and unknown events are survived', async () => {
    for (const q of ['search=ab', 'search=%22open', 'sort_by=color', 'limit=many', 'received_start=yesterday']) {
      const res = await call(base, `/api/tasks?${q}`)
      assert.equal(res.status, 400, q)
    }
    assert.match(JSON.parse((await call(base, '/api/tasks?search=NOT%20x')).body).error, /NOT is not supported/)
    assert.equal((await call(base, '/api/task/send-task/x', { method: 'POST', body: '{not json' })).status, 400)
    assert.equal((await call(base, '/api/task/send-task/x', { method: 'POST', body: '{"args": 5}' })).status, 400)
    assert.equal(
      (await call(base, '/api/task/send-task/x', { method: 'POST', body: 'x'.repeat(2 << 20) }).catch(() => ({ status: 413 }))).status,
      413,
    )
    assert.equal((await call(base, '/static/../../package.json')).status, 404)
    const before = cluster.state.eventCount
    for (const bad of [
      {},
      { type: null },
      { type: 'task-succeeded' },
      { type: 'worker-heartbeat' },
      { type: 'task-started', uuid: 42 },
      { type: 'task-failed', uuid: 'z', hostname: 'celery@stranger', timestamp: 'later', exception: { a: 1 } },
    ])
      cluster.onEvent(bad)
    assert.equal(cluster.state.eventCount, before + 1)
    assert.ok(cluster.state.workers.has('celery@stranger'))
    assert.equal((await call(base, '/api/task/info/z')).status, 200)
    assert.equal((await call(base, '/healthcheck')).body, 'OK')
  })

  it('a stream client that disconnects mid-stream leaves the server serving', async () => {
    await new Promise<void>((resolve, reject) => {
      const req = request(`${base}/api/ui/stream`, (res) => {
        res.once('data', () => {
          req.destroy()
          resolve()
        })
      })
      req.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? resolve() : reject(e)))
      req.end()
    })
    for (let i = 0; i < 50; i++) cluster.onEvent(event('task-received', { uuid: `s${i}`, name: 'tasks.add', args: '[]', kwargs: '{}' }))
    await new Promise((r) => setTimeout(r, 600))
    assert.equal((await call(base, '/api/tasks?limit=1')).status, 200)
  })

  it('--persistent: tasks and workers come back after a restart', async () => {
    cluster.save()
    const again = new Cluster({ brokerUrl: `file://${join(dir, 'broker')}`, maxTasks: 1000, persistent: { path: db } })
    assert.equal(again.state.tasks.get('e42ceb2d-8730-47b5-8b4d-8e0d2a1ef7c9')?.state, 'SUCCESS')
    assert.ok(again.state.workers.has('celery@worker1'))
    writeFileSync(join(dir, 'junk.json'), 'not json')
    assert.throws(
      () => new Cluster({ brokerUrl: 'file:///nowhere', maxTasks: 10, persistent: { path: join(dir, 'junk.json') } }),
      /not a tsq dashboard state file/,
    )
  })
})
