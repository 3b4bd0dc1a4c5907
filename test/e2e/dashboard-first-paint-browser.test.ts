// tsq-test: slow
// `tsq dashboard`'s pages show the cluster in their first response: with a
// tsq worker on RabbitMQ that ran some tasks, /tasks, /queues and /workers
// opened in headless Chromium (Debian's, through playwright-core) have their
// rows (the tasks, the worker's queue, the worker with its pool) as soon as the
// document is loaded, with no wait and with every /api/ call (the live stream
// included) refused, so nothing but the page itself can have drawn them. A task
// named and called with `</script><script>...` is among the rows as text and
// runs nothing. Screenshots as in dashboard-browser.test.ts.
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { BrowserContext, Page } from 'playwright-core'
import { declareEventExchange, EVENT_EXCHANGE } from '../../src/client/event-receiver.js'
import { createTransport } from '../../src/transport/index.js'
import { AMQP_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { ROOT, runTsq, startWorker, type SpawnedWorker } from '../helpers/cli.js'
import { CHROMIUM, CHROMIUM_ARGS, chromiumSkipReason, startDashboard, type SpawnedDashboard } from '../helpers/dashboard.js'
import { deleteCeleryQueues } from '../interop/helpers/cleanup.js'

const skip = chromiumSkipReason() || (await brokerSkipReason('amqp'))

const HOSTILE_NAME = 'proj.</script><script>window.__xss = 1</script>'
const HOSTILE_ARGS = `('</script><img src=x onerror="window.__xss = 2">', '<!--')`

describe('tsq dashboard: the first paint has the rows (amqp, a tsq worker)', { skip, timeout: 180_000 }, () => {
  const shots = process.env.TSQ_DASHBOARD_SCREENSHOTS ?? mkdtempSync(join(tmpdir(), 'tsq-dash-shots-'))
  const profile = mkdtempSync(join(tmpdir(), 'tsq-dash-chromium-'))
  const queue = uniqueName('dash-paint')
  const node = `${uniqueName('dash-paint')}@${hostname()}`
  const hostileId = `hostile-${uniqueName('task')}`
  const ids: string[] = []
  let worker: SpawnedWorker | undefined
  let dashboard: SpawnedDashboard | undefined
  let context: BrowserContext | undefined
  let page: Page

  const api = async <T>(path: string): Promise<T> => (await (await fetch(`${dashboard!.url}${path}`)).json()) as T

  /** A page's DOM as the test reads it: a table's rows (their key attribute and cells), the status line, what a script injection would leave. */
  interface Snapshot {
    rows: { key: string | null; cells: string[] }[]
    status: string
    xss: unknown
    injected: number
  }
  const SNAPSHOT = (table: string, key: string) => `({
    rows: [...document.querySelectorAll('table#${table} tbody tr')].map((tr) => ({
      key: tr.getAttribute('${key}'),
      cells: [...tr.querySelectorAll('td')].map((td) => td.textContent),
    })),
    status: document.getElementById('status').textContent,
    xss: window.__xss,
    injected: document.querySelectorAll('main script, main img').length,
  })`

  /** Opens the page, screenshots it at once and reads its DOM, without waiting for anything after the load. */
  const firstPaint = async (path: string, table: string, key: string): Promise<Snapshot> => {
    await page.goto(`${dashboard!.url}${path}`, { waitUntil: 'domcontentloaded' })
    await page.screenshot({ path: join(shots, `first-paint${path.replace(/\W+/g, '-')}.png`), fullPage: false })
    return page.evaluate<Snapshot>(SNAPSHOT(table, key))
  }

  before(async () => {
    mkdirSync(shots, { recursive: true })
    ;[worker, dashboard] = await Promise.all([
      startWorker(
        [
          '-A',
          `${ROOT}test/fixtures/tasks/interop-tasks.js`,
          '-b',
          AMQP_URL,
          '-Q',
          queue,
          '-P',
          'prefork',
          '-c',
          '2',
          '-E',
          '-l',
          'INFO',
          '--heartbeat-interval',
          '1',
          '--without-mingle',
          '--without-gossip',
        ],
        { nodename: node, readyTimeoutMs: 60_000 },
      ),
      startDashboard(['-b', AMQP_URL]),
    ])
    // The worker's online event makes the dashboard inspect it (its pool, its queues).
    await waitFor(
      async () =>
        (await api<{ workers: { hostname: string; pool: string | null }[] }>('/api/ui/workers')).workers.some(
          (w) => w.hostname === node && w.pool,
        ),
      {
        timeoutMs: 30_000,
        what: 'the worker inspected',
      },
    )
    const sent = await Promise.all(
      [1, 2, 3].map((i) =>
        runTsq(['call', 'proj.add', '--args', JSON.stringify([i, 40]), '-b', AMQP_URL, '-Q', queue], { timeoutMs: 30_000 }),
      ),
    )
    for (const r of sent) {
      assert.equal(r.code, 0, r.stderr)
      ids.push(r.stdout.trim())
    }
    // A task-received event as any client's worker could send it, its name and args made to break out of a <script>.
    const t = await createTransport(AMQP_URL)
    await t.connect()
    try {
      await declareEventExchange(t)
      const event = { type: 'task-received', uuid: hostileId, name: HOSTILE_NAME, args: HOSTILE_ARGS, kwargs: '{}', retries: 0 }
      const body = {
        ...event,
        root_id: hostileId,
        parent_id: null,
        hostname: node,
        utcoffset: 0,
        pid: 7,
        clock: 1,
        timestamp: Date.now() / 1000,
      }
      await t.publish(EVENT_EXCHANGE, 'task.received', {
        body: Buffer.from(JSON.stringify(body)),
        properties: { contentType: 'application/json', contentEncoding: 'utf-8', headers: {}, deliveryMode: 1, priority: 0 },
      })
    } finally {
      await t.close()
    }
    // What the pages are to show, known to the dashboard before they open.
    await waitFor(
      async () => {
        const { rows } = await api<{ rows: { uuid: string; state: string }[] }>('/api/ui/tasks?limit=25')
        return ids.every((id) => rows.some((r) => r.uuid === id && r.state === 'SUCCESS')) && rows.some((r) => r.uuid === hostileId)
      },
      { timeoutMs: 60_000, what: 'the tasks SUCCESS in the dashboard' },
    )
    await waitFor(async () => queue in (await api<{ queues: Record<string, unknown[]> }>('/api/ui/overview')).queues, {
      timeoutMs: 30_000,
      what: 'the queue sampled',
    })

    const { chromium } = await import('playwright-core')
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1400, height: 860 },
    })
    page = context.pages()[0] ?? (await context.newPage())
    // No call of the page's own reaches the server: what it shows came in the page.
    await page.route('**/api/**', (route) => route.abort())
  })

  after(async () => {
    await context?.close().catch(() => undefined)
    await Promise.all([worker?.stop(), dashboard?.stop()])
    await deleteCeleryQueues('amqp', AMQP_URL, [queue]).catch(() => undefined)
    rmSync(profile, { recursive: true, force: true })
  })

  it('/tasks has the tasks, and the hostile one as text, at first paint', async () => {
    const seen = await firstPaint('/tasks', 'tasks', 'data-uuid')
    for (const id of ids) {
      const row = seen.rows.find((r) => r.key === id)
      assert.ok(row, `${id} in ${JSON.stringify(seen.rows.map((r) => r.key))}`)
      assert.equal(row.cells[1], 'proj.add')
      assert.equal(row.cells[2], 'SUCCESS')
    }
    const hostile = seen.rows.find((r) => r.key === hostileId)
    assert.ok(hostile, 'the hostile task is listed')
    assert.equal(hostile.cells[1], HOSTILE_NAME)
    assert.equal(hostile.cells[3], HOSTILE_ARGS)
    assert.equal(seen.xss, undefined)
    assert.equal(seen.injected, 0)
    assert.match(seen.status, /workers online/, 'the status line')
  })

  it('/queues has the worker queue at first paint', async () => {
    const seen = await firstPaint('/queues', 'queues', 'data-queue')
    assert.ok(
      seen.rows.some((r) => r.key === queue),
      JSON.stringify(seen.rows.map((r) => r.key)),
    )
  })

  it('/workers has the worker with its pool and concurrency at first paint', async () => {
    const seen = await firstPaint('/workers', 'workers', 'data-worker')
    const row = seen.rows.find((r) => r.key === node)
    assert.ok(row, `${node} listed`)
    assert.equal(row.cells[1], 'Online')
    assert.equal(row.cells[3], 'prefork', 'the Pool column')
    assert.equal(row.cells[4], '2', 'the Concurrency column')
    assert.ok(row.cells[12]?.includes(queue), 'the Queues column')
  })
})
