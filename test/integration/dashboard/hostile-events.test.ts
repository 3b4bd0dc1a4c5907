// `tsq dashboard` (the real process, --persistent) on each broker, sent over
// the wire a task-received event whose args nest 10,000 levels (alone and in
// a task.multi batch) while a page's live stream is open: the event is dropped
// and counted (summary, /metrics), the stream keeps updating, the APIs answer,
// the process lives, and TERM writes the state file. Also the Host check
// against DNS rebinding (421) and a hidden page's action refused.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { declareEventExchange, EVENT_EXCHANGE } from '../../../src/client/event-receiver.js'
import { createTransport } from '../../../src/transport/index.js'
import { AMQP_URL, brokerSkipReason, REDIS_URL, waitFor, type BrokerKind } from '../../helpers/brokers.js'
import { startDashboard, type SpawnedDashboard } from '../../helpers/dashboard.js'

function call(
  base: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method: options.method ?? 'GET', headers: options.headers, agent: false }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (d) => (body += d))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end(options.body)
  })
}

const nested = (levels: number): string => `${'['.repeat(levels)}${']'.repeat(levels)}`

for (const kind of ['redis', 'amqp'] as BrokerKind[]) {
  const skip = await brokerSkipReason(kind)
  describe(`dashboard against hostile input (${kind})`, { skip, timeout: 120_000 }, () => {
    const url = kind === 'redis' ? REDIS_URL : AMQP_URL
    const dir = mkdtempSync(join(tmpdir(), 'tsq-dash-hostile-'))
    const db = join(dir, 'state.json')
    const scheduleFile = join(dir, 'tsq-beat-schedule.json')
    let dashboard: SpawnedDashboard | undefined
    let port = ''
    const stream = { text: '', closed: false, abort: new AbortController() }

    const publish = async (...bodies: string[]): Promise<void> => {
      const t = await createTransport(url)
      await t.connect()
      try {
        await declareEventExchange(t)
        for (const body of bodies)
          await t.publish(EVENT_EXCHANGE, 'task.received', {
            body: Buffer.from(body),
            properties: { contentType: 'application/json', contentEncoding: 'utf-8', headers: {}, deliveryMode: 1, priority: 0 },
          })
      } finally {
        await t.close()
      }
    }
    const received = (uuid: string, args = '(1, 2)'): Record<string, unknown> => ({
      type: 'task-received',
      uuid,
      name: 'proj.add',
      args,
      kwargs: '{}',
      retries: 0,
      root_id: uuid,
      parent_id: null,
      hostname: 'celery@hostile',
      utcoffset: 0,
      pid: 7,
      clock: 1,
      timestamp: Date.now() / 1000,
    })
    const info = async (uuid: string): Promise<number> => (await call(dashboard!.url, `/api/task/info/${uuid}`)).status
    const summary = async () => JSON.parse((await call(dashboard!.url, '/api/ui/summary')).body) as { refusedEvents: number }

    before(async () => {
      dashboard = await startDashboard(['-b', url, '--persistent', '--db', db, '--schedule', scheduleFile])
      port = new URL(dashboard.url).port
      // A page's live stream, read for as long as the test runs.
      const res = await fetch(`${dashboard.url}/api/ui/stream`, { signal: stream.abort.signal })
      void (async () => {
        try {
          for await (const chunk of res.body!) stream.text += Buffer.from(chunk).toString('utf8')
        } catch {
          // aborted at the end
        }
        stream.closed = true
      })()
    })

    after(async () => {
      stream.abort.abort()
      await dashboard?.stop('SIGKILL')
      rmSync(dir, { recursive: true, force: true })
    })

    const first = randomUUID()
    const last = randomUUID()

    it('an event nesting 10,000 levels is dropped and counted; the stream, the APIs and the process go on', async () => {
      await waitFor(
        async () => {
          await publish(JSON.stringify(received(first)))
          return (await info(first)) === 200
        },
        { timeoutMs: 30_000, what: 'the first event heard' },
      )
      const deep = randomUUID()
      const deepEvent = JSON.stringify(received(deep)).replace('"(1, 2)"', nested(10_000))
      await publish(deepEvent, `[${JSON.stringify(received(randomUUID()))},${deepEvent}]`)
      await waitFor(async () => (await summary()).refusedEvents >= 2, { timeoutMs: 20_000, what: 'the nested events refused' })
      const updates = stream.text.split('event: update').length
      await publish(JSON.stringify(received(last)))
      await waitFor(async () => (await info(last)) === 200, { timeoutMs: 20_000, what: 'an event after the nested ones' })
      await waitFor(() => stream.text.split('event: update').length > updates && stream.text.includes(last), {
        timeoutMs: 20_000,
        what: 'a live update after the nested events',
      })
      assert.equal(stream.closed, false)
      assert.equal(dashboard!.child.exitCode, null)
      assert.equal(await info(deep), 404)
      assert.equal((await call(dashboard!.url, '/api/tasks')).status, 200)
      assert.equal((await call(dashboard!.url, `/api/task/info/${first}`)).status, 200)
      const metrics = (await call(dashboard!.url, '/metrics')).body
      assert.match(metrics, /tsq_dashboard_events_received_total\{outcome="refused"\} 2/)
      assert.match(dashboard!.output(), /event body refused: nests deeper than 32 levels/)
    })

    it("a foreign Host is refused with 421 (the probe's rebinding POST included); the bound address and localhost are answered", async () => {
      const evil = await call(dashboard!.url, '/api/task/rate-limit/proj.add', {
        method: 'POST',
        headers: {
          Host: `rebind.evil.example:${port}`,
          Origin: `http://rebind.evil.example:${port}`,
          'Content-Type': 'application/x-www-form-urlencoded',
        },
        body: 'workername=w1@probe&ratelimit=7/m',
      })
      assert.equal(evil.status, 421)
      assert.match(evil.body, /does not answer to host 'rebind\.evil\.example:\d+'/)
      assert.equal((await call(dashboard!.url, '/api/tasks', { headers: { Host: `rebind.evil.example:${port}` } })).status, 421)
      assert.equal((await call(dashboard!.url, '/', { headers: { Host: 'rebind.evil.example' } })).status, 421)
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'LOCALHOST.'])
        assert.equal((await call(dashboard!.url, '/api/tasks', { headers: { Host: host } })).status, 200, host)
      // An Origin that is not the page's own Host is still refused.
      assert.equal(
        (
          await call(dashboard!.url, '/api/task/revoke/x', {
            method: 'POST',
            headers: { Host: `localhost:${port}`, Origin: `http://127.0.0.1:${port}` },
          })
        ).status,
        403,
      )
      assert.equal(
        (
          await call(dashboard!.url, '/api/task/revoke/x', {
            method: 'POST',
            headers: { Host: `localhost:${port}`, Origin: `http://localhost:${port}` },
          })
        ).status,
        200,
      )
    })

    it('a hidden page takes no action: adding a schedule entry without a schedule store creates no file', async () => {
      const res = await call(dashboard!.url, '/api/ui/schedule/add/x', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ task: 'proj.add', every: '5' }),
      })
      assert.equal(res.status, 404)
      assert.match(JSON.parse(res.body).error, /schedule page is not shown/)
      assert.equal(existsSync(scheduleFile), false)
      assert.equal((await call(dashboard!.url, '/api/ui/schedule')).status, 404)
    })

    it('TERM after the nested events writes the state file', async () => {
      stream.abort.abort()
      assert.equal(await dashboard!.stop('SIGTERM'), 0)
      const saved = JSON.parse(readFileSync(db, 'utf8')) as { tasks: { uuid: string }[] }
      const ids = saved.tasks.map((t) => t.uuid)
      assert.ok(ids.includes(first) && ids.includes(last), `state file holds ${ids.join(', ')}`)
    })
  })
}

describe('--allowed-hosts and conf.dashboard_allowed_hosts reach the Host check', { timeout: 60_000 }, () => {
  it('names from the flag (repeated, comma lists) and the config are answered, others get 421', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tsq-dash-hosts-'))
    const config = join(dir, 'celeryconfig.json')
    writeFileSync(config, JSON.stringify({ dashboard_allowed_hosts: ['conf.example'] }))
    const dashboard = await startDashboard([
      '-b',
      `file://${join(dir, 'broker')}`,
      '--config',
      config,
      '--allowed-hosts',
      'a.example,b.example',
      '--allowed-hosts',
      'c.example',
    ])
    try {
      for (const host of ['a.example', 'b.example:5555', 'c.example', 'conf.example', 'localhost'])
        assert.equal((await call(dashboard.url, '/api/tasks', { headers: { Host: host } })).status, 200, host)
      assert.equal((await call(dashboard.url, '/api/tasks', { headers: { Host: 'd.example' } })).status, 421)
    } finally {
      await dashboard.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
