// `tsq dashboard` (the real process) on a Redis server of this test's own, on
// a free port, so restarting it disturbs no one: events arrive over the wire,
// among them a body that is not an event and events from a worker it never
// heard of; then Redis is stopped and started again empty (its fanout binding
// gone with it). The dashboard says it lost the broker, reconnects, hears new
// events, and still has what it knew before.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { declareEventExchange, EVENT_EXCHANGE } from '../../../src/client/event-receiver.js'
import { createTransport } from '../../../src/transport/index.js'
import { waitFor } from '../../helpers/brokers.js'
import { startDashboard, type SpawnedDashboard } from '../../helpers/dashboard.js'
import { GroupProcess, sleep } from '../../helpers/process-group.js'
import { freePort } from '../../interop/helpers/tls-brokers.js'
import { hasRedisServer, startRedisServer } from '../../helpers/redis-server.js'
const skip = hasRedisServer ? false : 'redis-server not installed (apt-get install -y redis-server); skipping'
if (skip && process.env.CI) throw new Error(`CI requires ${skip}`)

describe('tsq dashboard survives a broker restart (its own redis-server)', { skip, timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-dash-restart-'))
  let port = 0
  let url = ''
  let redis: GroupProcess | undefined
  let dashboard: SpawnedDashboard | undefined

  /** Publishes raw bodies to celeryev as a worker does (a fresh connection each time: the server may have just restarted). */
  const publish = async (...bodies: string[]): Promise<void> => {
    const t = await createTransport(url)
    await t.connect()
    try {
      await declareEventExchange(t)
      for (const body of bodies)
        await t.publish(EVENT_EXCHANGE, 'task.multi', {
          body: Buffer.from(body),
          properties: { contentType: 'application/json', contentEncoding: 'utf-8', headers: {}, deliveryMode: 1, priority: 0 },
        })
    } finally {
      await t.close()
    }
  }
  const taskEvents = (uuid: string, hostname: string): string => {
    const now = Date.now() / 1000
    const base = { hostname, utcoffset: 0, pid: 7, clock: 1, timestamp: now }
    return JSON.stringify([
      { type: 'task-received', uuid, name: 'proj.add', args: '(1, 2)', kwargs: '{}', retries: 0, root_id: uuid, parent_id: null, ...base },
      { type: 'task-succeeded', uuid, result: '3', runtime: 0.01, ...base },
    ])
  }
  const info = async (uuid: string): Promise<{ state?: string; worker?: string } | null> => {
    const res = await fetch(`${dashboard!.url}/api/task/info/${uuid}`)
    return res.status === 200 ? ((await res.json()) as { state: string; worker: string }) : null
  }
  const summary = async () =>
    (await (await fetch(`${dashboard!.url}/api/ui/summary`)).json()) as { connected: boolean; unreadableEvents: number }

  before(async () => {
    port = await freePort()
    url = `redis://127.0.0.1:${port}/0`
    redis = await startRedisServer(port, dir)
    dashboard = await startDashboard(['-b', url])
  })

  after(async () => {
    await dashboard?.stop()
    await redis?.stopWith(() => process.kill(redis!.pid, 'SIGTERM'), 10_000)
    rmSync(dir, { recursive: true, force: true })
  })

  const first = randomUUID()
  const second = randomUUID()

  it('bad bodies and unknown workers over the wire are survived', async () => {
    // The dashboard binds its queue a moment after it says where it listens: publish until heard.
    await waitFor(
      async () => {
        await publish(taskEvents(first, 'celery@never-announced'))
        return (await info(first))?.state === 'SUCCESS'
      },
      { timeoutMs: 30_000, what: 'the first task' },
    )
    const unreadable = (await summary()).unreadableEvents
    await publish(
      '{not json',
      '"a string"',
      JSON.stringify([{ type: 'task-started' }, { no: 'type' }]),
      taskEvents(randomUUID(), 'celery@stranger'),
    )
    await waitFor(async () => (await summary()).unreadableEvents > unreadable, { timeoutMs: 20_000, what: 'the bad bodies counted' })
    const workers = (await (await fetch(`${dashboard!.url}/api/workers?refresh=0`)).json()) as Record<string, unknown>
    assert.ok(
      'celery@stranger' in workers || (await (await fetch(`${dashboard!.url}/api/ui/workers`)).text()).includes('celery@stranger'),
      'the unknown worker is listed',
    )
    assert.equal((await fetch(`${dashboard!.url}/healthcheck`)).status, 200)
  })

  it('Redis stopped and started again: the dashboard reconnects, hears new events and keeps what it knew', async () => {
    await redis!.stopWith(() => process.kill(redis!.pid, 'SIGTERM'), 10_000)
    await waitFor(async () => !(await summary()).connected, { timeoutMs: 30_000, what: 'the loss noticed' })
    // While the broker is away the pages still answer from the state.
    assert.equal((await info(first))?.state, 'SUCCESS')
    await sleep(1000)
    redis = await startRedisServer(port, dir)
    await waitFor(async () => (await summary()).connected, { timeoutMs: 60_000, what: 'reconnected' })
    // The restarted server is empty: the dashboard must have bound its queue again to hear this.
    await waitFor(
      async () => {
        await publish(taskEvents(second, 'celery@after-restart'))
        return (await info(second))?.state === 'SUCCESS'
      },
      { timeoutMs: 60_000, what: 'an event after the restart' },
    )
    assert.equal((await info(first))?.state, 'SUCCESS', 'the state from before the restart is kept')
    assert.match(dashboard!.output(), /broker connection lost/)
    assert.equal(dashboard!.child.exitCode, null, 'still running')
  })
})
