// tsq-test: slow
// `tsq dashboard` in real headless Chromium (Debian's, driven by
// playwright-core), on RabbitMQ with a Python Celery worker and a tsq worker:
// both are listed, each with its pool; a task sent from Python turns SUCCESS
// without a reload; a running task's page says where it runs (tsq why's
// answer), then it is terminated from its page and turns REVOKED; pool grow from the worker page changes `inspect stats`; `<script>`
// in args is text; with --basic-auth the page is refused without credentials.
// Screenshots of each page go to TSQ_DASHBOARD_SCREENSHOTS (default: a
// temporary directory).
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { BrowserContext, Page } from 'playwright-core'
import { AMQP_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { ROOT, runTsq, startWorker, type SpawnedWorker } from '../helpers/cli.js'
import { CHROMIUM, CHROMIUM_ARGS, chromiumSkipReason, startDashboard, type SpawnedDashboard } from '../helpers/dashboard.js'
import { deleteCeleryQueues } from '../interop/helpers/cleanup.js'
import { runCelery, startPythonWorker, type PeerEnv, type PythonWorker } from '../interop/helpers/python-worker.js'

const BACKEND = 'redis://127.0.0.1:6379/13'

function pythonSkipReason(): string | false {
  try {
    execFileSync('/usr/bin/python3', ['-c', 'import celery, redis'], { stdio: 'ignore' })
    return false
  } catch {
    const reason = 'Python Celery not installed (apt-get install -y python3-celery python3-redis); skipping'
    if (process.env.CI) throw new Error(`CI requires ${reason}`)
    return reason
  }
}

const skip = chromiumSkipReason() || (await brokerSkipReason('amqp')) || (await brokerSkipReason('redis')) || pythonSkipReason()

describe('tsq dashboard in Chromium (amqp, a Python and a tsq worker)', { skip, timeout: 240_000 }, () => {
  const shots = process.env.TSQ_DASHBOARD_SCREENSHOTS ?? mkdtempSync(join(tmpdir(), 'tsq-dash-shots-'))
  const profile = mkdtempSync(join(tmpdir(), 'tsq-dash-chromium-'))
  const tsqQueue = uniqueName('dash-tsq')
  const pyQueue = uniqueName('dash-py')
  const tsqNode = `${uniqueName('dash-tsq')}@${hostname()}`
  const peer: PeerEnv = { broker: AMQP_URL, backend: BACKEND, queue: pyQueue }
  let tsqWorker: SpawnedWorker | undefined
  let pyWorker: PythonWorker | undefined
  let dashboard: SpawnedDashboard | undefined
  let context: BrowserContext | undefined
  let page: Page

  const shot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: false })
  const open = async (path: string) => {
    await page.goto(`${dashboard!.url}${path}`)
  }

  before(async () => {
    mkdirSync(shots, { recursive: true })
    ;[tsqWorker, pyWorker, dashboard] = await Promise.all([
      startWorker(
        [
          '-A',
          `${ROOT}test/fixtures/tasks/interop-tasks.js`,
          '-b',
          AMQP_URL,
          '--result-backend',
          BACKEND,
          '-Q',
          tsqQueue,
          '-P',
          'prefork',
          '-c',
          '1',
          '-E',
          '-l',
          'INFO',
          '--heartbeat-interval',
          '1',
          '--without-mingle',
          '--without-gossip',
        ],
        { nodename: tsqNode, readyTimeoutMs: 60_000 },
      ),
      startPythonWorker({ peer, concurrency: 1, extraArgs: ['-E'], readyTimeoutMs: 60_000 }),
      startDashboard(['-b', AMQP_URL, '--result-backend', BACKEND]),
    ])
    const { chromium } = await import('playwright-core')
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1400, height: 860 },
    })
    page = context.pages()[0] ?? (await context.newPage())
    // Every action asks first; the test says yes.
    page.on('dialog', (dialog) => void dialog.accept())
  })

  after(async () => {
    await context?.close().catch(() => undefined)
    await Promise.all([tsqWorker?.stop(), pyWorker?.stop(), dashboard?.stop()])
    await deleteCeleryQueues('amqp', AMQP_URL, [tsqQueue, pyQueue]).catch(() => undefined)
    rmSync(profile, { recursive: true, force: true })
  })

  it('the workers page lists the Python worker and the tsq worker, online', async () => {
    await open('/workers')
    for (const node of [tsqNode, pyWorker!.nodename]) {
      const row = page.locator(`tr[data-worker="${node}"]`)
      await row.waitFor({ timeout: 30_000 })
      await waitFor(async () => (await row.locator('td').nth(1).textContent()) === 'Online', { timeoutMs: 30_000, what: `${node} online` })
    }
    await waitFor(
      async () => (await page.locator(`tr[data-worker="${pyWorker!.nodename}"] td`).nth(2).textContent())?.includes('py-celery'),
      { timeoutMs: 20_000, what: 'software column' },
    )
    // Both run -P prefork: the Pool column reads it from each one's `inspect stats` alike.
    for (const node of [tsqNode, pyWorker!.nodename])
      await waitFor(async () => (await page.locator(`tr[data-worker="${node}"] td`).nth(3).textContent()) === 'prefork', {
        timeoutMs: 20_000,
        what: `${node}'s pool column`,
      })
    await shot('workers')
  })

  it('a task sent from Python appears and turns SUCCESS without a reload', async () => {
    await open('/tasks')
    await page.locator('table#tasks').waitFor()
    await page.evaluate(() => ((globalThis as unknown as { __sameDocument: boolean }).__sameDocument = true))
    const sent = await runCelery(['call', 'proj.add', '--args', '[20, 22]', '--queue', pyQueue], peer, { timeoutMs: 60_000 })
    assert.equal(sent.code, 0, sent.stderr)
    const id = sent.stdout.trim()
    const state = page.locator(`tr[data-uuid="${id}"] [data-state]`)
    await waitFor(async () => (await state.count()) > 0 && (await state.textContent()) === 'SUCCESS', {
      timeoutMs: 60_000,
      what: 'SUCCESS row',
    })
    assert.equal(
      await page.evaluate(() => (globalThis as unknown as { __sameDocument?: boolean }).__sameDocument),
      true,
      'the page was reloaded',
    )
    assert.equal(await page.locator(`tr[data-uuid="${id}"] td`).nth(5).textContent(), '42')
    await shot('tasks')
  })

  it('a running task is terminated from its page and turns REVOKED', async () => {
    const sent = await runTsq(['call', 'proj.sleep', '--args', '[60]', '-b', AMQP_URL, '-Q', tsqQueue], { timeoutMs: 30_000 })
    assert.equal(sent.code, 0, sent.stderr)
    const id = sent.stdout.trim()
    // The page may open before the dashboard heard of the task.
    await waitFor(async () => (await fetch(`${dashboard!.url}/api/task/info/${id}`)).status === 200, {
      timeoutMs: 30_000,
      what: 'task known',
    })
    await open(`/task/${id}`)
    const state = page.locator('#task-fields [data-field="state"]')
    await waitFor(async () => (await state.textContent()) === 'STARTED', { timeoutMs: 30_000, what: 'STARTED' })
    // The page's answer to "where is it?" (tsq why's), asked again once it runs.
    const why = page.locator('#why-summary')
    await waitFor(
      async () => {
        if ((await why.count()) === 0) return false
        if ((await why.getAttribute('data-state')) === 'running') return true
        await page.locator('#why-again').click()
        return false
      },
      { timeoutMs: 30_000, intervalMs: 1_500, what: 'the answer: running' },
    )
    assert.match((await why.textContent()) ?? '', new RegExp(`^Running: on ${tsqNode.replace(/[.]/g, '\\.')}`))
    await page.locator('#terminate').click()
    await waitFor(async () => (await state.textContent()) === 'REVOKED', { timeoutMs: 30_000, what: 'REVOKED' })
    assert.match((await page.locator('#timeline').textContent()) ?? '', /task-revoked/)
    await shot('task')
  })

  it('pool grow on the worker page changes `inspect stats`', async () => {
    const stats = async (): Promise<number> => {
      const res = await runTsq(['inspect', 'stats', '-d', tsqNode, '-b', AMQP_URL, '--json', '-t', '5'], { timeoutMs: 30_000 })
      assert.equal(res.code, 0, res.stderr)
      const body = JSON.parse(res.stdout) as Record<string, { pool: { 'max-concurrency': number } }>
      return body[tsqNode]!.pool['max-concurrency']
    }
    const before = await stats()
    await open(`/worker/${encodeURIComponent(tsqNode)}`)
    await page.locator('#worker-summary').waitFor({ timeout: 30_000 })
    await page.locator('form[data-action="Pool grow"] button').click()
    const reply = page.locator('#action-replies')
    await waitFor(async () => /ok|error|No node/.test((await reply.textContent()) ?? ''), { timeoutMs: 30_000, what: 'pool grow reply' })
    assert.match((await reply.textContent()) ?? '', /ok: /)
    assert.match((await reply.textContent()) ?? '', new RegExp(tsqNode.replace(/[.@]/g, '\\$&')))
    assert.equal(await stats(), before + 1)
    await shot('worker')
  })

  it('a task whose args hold <script> renders as text', async () => {
    const payload = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'
    const sent = await runTsq(['call', 'proj.add', '--args', JSON.stringify([payload, '!']), '-b', AMQP_URL, '-Q', tsqQueue], {
      timeoutMs: 30_000,
    })
    assert.equal(sent.code, 0, sent.stderr)
    const id = sent.stdout.trim()
    await waitFor(
      async () => {
        const res = await fetch(`${dashboard!.url}/api/task/info/${id}`)
        return res.status === 200 && ((await res.json()) as { state: string }).state === 'SUCCESS'
      },
      { timeoutMs: 30_000, what: 'task SUCCESS' },
    )
    await open(`/task/${id}`)
    const args = page.locator('#task-fields [data-field="args"]')
    await args.waitFor()
    assert.ok(((await args.textContent()) ?? '').includes('<script>window.__xss = 1</script>'))
    await open(`/tasks?search=${encodeURIComponent('__xss')}`)
    await page.locator(`tr[data-uuid="${id}"]`).waitFor({ timeout: 20_000 })
    assert.equal(await page.evaluate(() => (globalThis as unknown as { __xss?: number }).__xss), undefined)
    assert.equal(await page.locator('main script, main img').count(), 0)
  })

  it('the queues and overview pages draw their charts', async () => {
    await open('/queues')
    await page.locator(`tr[data-queue="${tsqQueue}"]`).waitFor({ timeout: 30_000 })
    await page.locator('.uplot').first().waitFor({ timeout: 10_000 })
    await shot('queues')
    await open('/overview')
    await page.locator('#chart-throughput .uplot').waitFor({ timeout: 10_000 })
    await shot('overview')
  })

  it('with --basic-auth the page is refused without credentials and served with them', async () => {
    const guarded = await startDashboard(['-b', AMQP_URL, '--basic-auth', 'admin:s3cret'])
    try {
      // Chromium turns a 401 with a challenge it has no credentials for into a failed navigation.
      const refused = await page.goto(`${guarded.url}/workers`).then(
        (res) => `status ${res?.status()}`,
        (error: Error) => error.message,
      )
      assert.match(refused, /status 401|ERR_INVALID_AUTH_CREDENTIALS/)
      assert.equal(await page.locator('table#workers').count(), 0)
      assert.equal((await fetch(`${guarded.url}/api/workers`)).status, 401)
      assert.equal((await fetch(`${guarded.url}/api/ui/stream`)).status, 401)
      const second = await context!.newPage()
      await second.setExtraHTTPHeaders({ Authorization: `Basic ${Buffer.from('admin:s3cret').toString('base64')}` })
      const served = await second.goto(`${guarded.url}/workers`)
      assert.equal(served?.status(), 200)
      await second.locator('table#workers').waitFor()
      await second.close()
    } finally {
      await guarded.stop()
    }
  })
})
