// tsq-test: slow
// The dashboard's pages of tsq's other features, in headless Chromium, on
// Redis: the events bus's archive (an event whose handler always fails,
// replayed from the page), task locks (a held lock shown and removed) and
// beat's schedule store (an entry added by `tsq schedule add`, disabled,
// enabled and removed from the page; another added and changed from the
// page); each action is checked against the feature's own CLI or store
// afterwards. A dashboard where none is present
// does not show their pages. Screenshots as in dashboard-browser.test.ts.
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { BrowserContext, Page } from 'playwright-core'
import { AMQP_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { runTsq, type SpawnedWorker } from '../helpers/cli.js'
import { CHROMIUM, CHROMIUM_ARGS, chromiumSkipReason, startDashboard, type SpawnedDashboard } from '../helpers/dashboard.js'
import { busBroker, cleanupService, fire, jsonOf, readRuns, startServiceWorker, waitUntil, type BusBroker } from './bus-support.js'
import { lockStoreAt, type LockStore } from '../../src/locks/index.js'

const skip = chromiumSkipReason() || (await brokerSkipReason('redis')) || (await brokerSkipReason('amqp'))

describe('tsq dashboard: archive, locks and schedule pages in Chromium (redis)', { skip, timeout: 180_000 }, () => {
  const shots = process.env.TSQ_DASHBOARD_SCREENSHOTS ?? mkdtempSync(join(tmpdir(), 'tsq-dash-shots-'))
  const profile = mkdtempSync(join(tmpdir(), 'tsq-dash-chromium-'))
  const dir = mkdtempSync(join(tmpdir(), 'tsq-dash-features-'))
  const schedulePath = join(dir, 'beat-schedule.json')
  const service = uniqueName('dashsvc')
  const event = `${uniqueName('ev')}.order.placed`
  const lockId = `proj.report:${uniqueName('lock')}`
  const entry = uniqueName('nightly')
  const log = join(dir, 'runs.jsonl')
  let broker: BusBroker
  let worker: SpawnedWorker | undefined
  let dashboard: SpawnedDashboard | undefined
  let locks: LockStore | undefined
  let context: BrowserContext | undefined
  let page: Page
  let archivedId: string

  const shot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: false })
  const open = (path: string) => page.goto(`${dashboard!.url}${path}`)

  before(async () => {
    mkdirSync(shots, { recursive: true })
    broker = busBroker('redis')
    // No retries: the failing handler's event goes straight to the archive.
    worker = await startServiceWorker(broker, {
      service,
      events: [event],
      log,
      nodename: `${service}@h`,
      env: { AMQP_EVENTS_MAX_RETRIES: '0', BUS_ALWAYS_FAIL: '1' },
    })
    ;[archivedId] = (await fire(broker, event, [[{ order: 7 }]])) as [string]
    await waitUntil(
      () => worker!.output().includes(`archived to ${service}:archived`),
      30_000,
      'the archive',
      () => worker!.output().slice(-2000),
    )
    locks = await lockStoreAt(broker.url)
    const held = await locks.acquire(lockId, 600_000, { node: 'reporter@h', pid: 4242, task: 'proj.report', taskId: 'b9c1e1d4-report' })
    assert.ok(held.acquired)
    const added = await runTsq(
      ['schedule', 'add', entry, '-s', schedulePath, '-t', 'proj.cleanup', '--every', '3600', '--args', '[1, "<b>bold</b>"]'],
      { env: broker.env, timeoutMs: 60_000 },
    )
    assert.equal(added.code, 0, added.stderr)
    dashboard = await startDashboard(['-b', broker.url, '-s', schedulePath], { env: broker.env })
    const { chromium } = await import('playwright-core')
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1400, height: 700 },
    })
    page = context.pages()[0] ?? (await context.newPage())
    page.on('dialog', (dialog) => void dialog.accept())
  })

  after(async () => {
    await context?.close().catch(() => undefined)
    await Promise.all([worker?.stop(), dashboard?.stop()])
    await locks?.remove(lockId).catch(() => undefined)
    await locks?.close().catch(() => undefined)
    if (broker) await cleanupService(broker, service, [event], 0).catch(() => undefined)
    rmSync(profile, { recursive: true, force: true })
    rmSync(dir, { recursive: true, force: true })
  })

  it('the nav shows Archive, Locks and Schedule where the features are present', async () => {
    await open('/workers')
    for (const name of ['Archive', 'Locks', 'Schedule'])
      await page.locator('header nav a', { hasText: name }).waitFor({ state: 'visible', timeout: 20_000 })
  })

  it('the archive page lists the failed event and replays it (as `tsq archive replay`)', async () => {
    await open('/archive')
    const row = page.locator(`table#archive tr[data-id="${archivedId}"]`)
    await row.waitFor({ timeout: 30_000 })
    assert.match((await row.textContent()) ?? '', /failed on purpose/)
    assert.equal(await page.locator(`#archive-services tr[data-service="${service}"] td`).nth(1).textContent(), '1')
    await shot('archive')
    const runsBefore = readRuns(log).length
    await row.locator('button[data-action="replay"]').click()
    await waitFor(async () => ((await page.locator('#action-replies').textContent()) ?? '').includes(archivedId), {
      timeoutMs: 30_000,
      what: 'the replay reply',
    })
    // Replayed to the handler queue with its retries reset: the handler runs it again (and, still failing, archives it again).
    await waitUntil(
      () => readRuns(log).length > runsBefore,
      30_000,
      'the replayed run',
      () => worker!.output().slice(-2000),
    )
    assert.equal(readRuns(log).at(-1)!.retries, 0)
  })

  it('a replay of an id not in the archive is refused with one clear line', async () => {
    const res = await fetch(`${dashboard!.url}/api/ui/archive/replay/${service}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ ids: ['no-such-id'] }),
    })
    assert.equal(res.status, 404)
    assert.match(((await res.json()) as { error: string }).error, /no archived event no-such-id/)
  })

  it('the locks page shows the held lock and removes it (as `tsq locks show` / `rm`)', async () => {
    await open('/locks')
    const row = page.locator(`table#locks tr[data-id="${lockId}"]`)
    await row.waitFor({ timeout: 20_000 })
    assert.match((await row.textContent()) ?? '', /reporter@h \(pid 4242\)/)
    await row.locator('button[data-action="show"]').click()
    await waitFor(
      async () =>
        (await page
          .locator('#lock-fields [data-field="taskId"]')
          .textContent()
          .catch(() => '')) === 'b9c1e1d4-report',
      { timeoutMs: 10_000, what: 'the lock shown' },
    )
    await shot('locks')
    const shown = jsonOf<{ id: string }>(
      await runTsq(['locks', 'show', lockId, '-b', broker.url, '--json'], { env: broker.env, timeoutMs: 30_000 }),
      'tsq locks show',
    )
    assert.equal(shown.id, lockId)
    await row.locator('button[data-action="rm"]').click()
    await waitFor(async () => (await page.locator(`table#locks tr[data-id="${lockId}"]`).count()) === 0, {
      timeoutMs: 20_000,
      what: 'the lock gone from the page',
    })
    assert.equal(await locks!.get(lockId), null, 'the store no longer holds it')
  })

  it('the schedule page shows the entry, disables, enables and removes it (as `tsq schedule`)', async () => {
    await open('/schedule')
    const row = page.locator(`table#schedule tr[data-name="${entry}"]`)
    await row.waitFor({ timeout: 20_000 })
    assert.match((await row.textContent()) ?? '', /proj\.cleanup/)
    assert.equal(await row.locator('td').nth(3).textContent(), 'yes')
    assert.notEqual(await row.locator('td').nth(6).textContent(), '—', 'its next run is shown')
    await row.locator('button[data-action="show"]').click()
    // An argument with markup shows as text.
    await waitFor(
      async () =>
        (
          (await page
            .locator('#entry-fields [data-field="args"]')
            .textContent()
            .catch(() => '')) ?? ''
        ).includes('<b>bold</b>'),
      { timeoutMs: 10_000, what: 'the entry shown' },
    )
    assert.equal(await page.locator('#entry-fields b').count(), 0)
    await shot('schedule')
    const enabled = async () =>
      jsonOf<{ enabled: boolean }>(
        await runTsq(['schedule', 'show', entry, '-s', schedulePath, '--json'], { env: broker.env, timeoutMs: 30_000 }),
        'tsq schedule show',
      ).enabled
    await row.locator('button[data-action="disable"]').click()
    await waitFor(async () => (await row.locator('td').nth(3).textContent()) === 'no', { timeoutMs: 10_000, what: 'disabled on the page' })
    assert.equal(await enabled(), false)
    await row.locator('button[data-action="enable"]').click()
    await waitFor(async () => (await row.locator('td').nth(3).textContent()) === 'yes', { timeoutMs: 10_000, what: 'enabled on the page' })
    assert.equal(await enabled(), true)
    await row.locator('button[data-action="rm"]').click()
    await waitFor(async () => (await page.locator(`table#schedule tr[data-name="${entry}"]`).count()) === 0, {
      timeoutMs: 10_000,
      what: 'removed from the page',
    })
    const ls = jsonOf<{ name: string }[]>(
      await runTsq(['schedule', 'ls', '-s', schedulePath, '--json'], { env: broker.env, timeoutMs: 30_000 }),
      'tsq schedule ls',
    )
    assert.deepEqual(
      ls.map((e) => e.name),
      [],
    )
  })

  it('the schedule page adds an entry and changes it (as `tsq schedule add` / `set`)', async () => {
    const added = uniqueName('weekly')
    await open('/schedule')
    const form = page.locator('form#entry-form')
    await form.waitFor({ timeout: 20_000 })
    await form.locator('input[name="name"]').fill(added)
    await form.locator('input[name="task"]').fill('proj.report')
    await form.locator('select[name="kind"]').selectOption('every')
    await form.locator('input[name="when"]').fill('600')
    await form.locator('input[name="args"]').fill('[3, "<i>x</i>"]')
    await form.locator('input[name="kwargs"]').fill('{"note": "<script>window.pwned = 1</script>"}')
    await form.locator('input[name="queue"]').fill('reports')
    await form.locator('button[data-action="save"]').click()
    const row = page.locator(`table#schedule tr[data-name="${added}"]`)
    await row.waitFor({ timeout: 20_000 })
    assert.match(
      (await page.locator('#action-replies').textContent()) ?? '',
      new RegExp(`Add ${added}[\\s\\S]*proj\\.report`),
      'the reply is shown',
    )
    const show = async () =>
      jsonOf<{
        task: string
        schedule: string
        args: unknown[]
        kwargs: Record<string, unknown>
        options: { queue?: string }
        enabled: boolean
      }>(
        await runTsq(['schedule', 'show', added, '-s', schedulePath, '--json'], { env: broker.env, timeoutMs: 30_000 }),
        'tsq schedule show',
      )
    const first = await show()
    assert.equal(first.task, 'proj.report')
    assert.equal(first.schedule, 'every 600s')
    assert.deepEqual(first.args, [3, '<i>x</i>'])
    assert.deepEqual(first.kwargs, { note: '<script>window.pwned = 1</script>' })
    assert.equal(first.options.queue, 'reports')
    // Its markup is text on the page, never run.
    await row.locator('button[data-action="show"]').click()
    await waitFor(
      async () =>
        (
          (await page
            .locator('#entry-fields [data-field="kwargs"]')
            .textContent()
            .catch(() => '')) ?? ''
        ).includes('<script>'),
      { timeoutMs: 10_000, what: 'the new entry shown' },
    )
    assert.equal(await page.locator('#entry-fields script, #entry-fields i').count(), 0)
    assert.equal(await page.evaluate(() => (globalThis as { pwned?: number }).pwned), undefined)

    // Changed from the page: a crontab and another queue; the task and arguments stay.
    await row.locator('button[data-action="change"]').click()
    assert.equal(await form.locator('input[name="name"]').isDisabled(), true)
    assert.equal(await form.locator('input[name="task"]').inputValue(), 'proj.report')
    await form.locator('select[name="kind"]').selectOption('cron')
    await form.locator('input[name="when"]').fill('30 4 * * mon-fri')
    await form.locator('input[name="queue"]').fill('nightly')
    await shot('schedule-edit')
    await form.locator('button[data-action="save"]').click()
    await waitFor(async () => ((await row.locator('td').nth(2).textContent()) ?? '').startsWith('cron 30 4'), {
      timeoutMs: 10_000,
      what: 'the new schedule on the page',
    })
    assert.match((await page.locator('#action-replies').textContent()) ?? '', new RegExp(`Change ${added}[\\s\\S]*nightly`))
    const changed = await show()
    assert.match(changed.schedule, /^cron 30 4 \* \* /)
    assert.equal(changed.options.queue, 'nightly')
    assert.equal(changed.task, 'proj.report')
    assert.deepEqual(changed.args, [3, '<i>x</i>'])
    assert.equal(changed.enabled, true)

    // A bad crontab is refused with its reason; the entry stays as it was.
    await row.locator('button[data-action="change"]').click()
    await form.locator('select[name="kind"]').selectOption('cron')
    await form.locator('input[name="when"]').fill('99 * * * *')
    await form.locator('button[data-action="save"]').click()
    await waitFor(
      async () =>
        (
          (await page
            .locator('#action-replies .offline')
            .textContent()
            .catch(() => '')) ?? ''
        ).includes(`Change ${added} failed: 400`),
      { timeoutMs: 10_000, what: 'the refusal shown' },
    )
    assert.equal((await show()).schedule, changed.schedule)
    // A name in use is refused by add, as `tsq schedule add` refuses it.
    const again = await page.evaluate(
      async (name) =>
        (
          await fetch(`/api/ui/schedule/add/${encodeURIComponent(name)}`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ task: 'proj.other', every: '5' }),
          })
        ).status,
      added,
    )
    assert.equal(again, 409)
    const ls = jsonOf<{ name: string }[]>(
      await runTsq(['schedule', 'ls', '-s', schedulePath, '--json'], { env: broker.env, timeoutMs: 30_000 }),
      'tsq schedule ls',
    )
    assert.deepEqual(
      ls.map((e) => e.name),
      [added],
    )
  })

  it('a cross-site POST to these actions is refused', async () => {
    const res = await fetch(`${dashboard!.url}/api/ui/lock/rm/${encodeURIComponent(lockId)}`, {
      method: 'POST',
      headers: { Origin: 'http://evil.example', 'Sec-Fetch-Site': 'cross-site' },
    })
    assert.equal(res.status, 403)
    const get = await fetch(`${dashboard!.url}/api/ui/schedule/rm/${encodeURIComponent(entry)}`)
    assert.equal(get.status, 405)
    const add = await fetch(`${dashboard!.url}/api/ui/schedule/add/evil`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Origin: 'http://evil.example' },
      body: JSON.stringify({ task: 'proj.x', every: '1' }),
    })
    assert.equal(add.status, 403)
    assert.equal((await fetch(`${dashboard!.url}/api/ui/schedule/set/${encodeURIComponent(entry)}`)).status, 405)
  })

  it('--scheduler redis with no Redis to find is one line and exit 64', async () => {
    const res = await runTsq(['dashboard', '-b', AMQP_URL, '-S', 'redis', '--port', '0'], {
      env: { TSQ_RESULT_BACKEND: '', CELERY_RESULT_BACKEND: '' },
      timeoutMs: 60_000,
    })
    assert.equal(res.code, 64, res.stderr)
    assert.match(res.stderr, /--scheduler redis needs --redis-url/)
    assert.equal(res.stderr.trim().split('\n').length, 1, res.stderr)
  })

  it('a dashboard shows only the pages of the features present', async () => {
    // RabbitMQ: its lock store is the broker itself (exclusive queues), so Locks is there; no schedule file.
    const bare = await startDashboard(['-b', AMQP_URL, '-s', join(dir, 'absent.json')], {
      env: { TSQ_RESULT_BACKEND: '', CELERY_RESULT_BACKEND: '' },
    })
    try {
      const present = (await (await fetch(`${bare.url}/api/ui/features`)).json()) as Record<string, boolean>
      assert.equal(present.locks, true)
      assert.equal(present.schedule, false)
      await page.goto(`${bare.url}/workers`)
      await page.locator('table#workers').waitFor()
      await new Promise((r) => setTimeout(r, 500))
      assert.equal(await page.locator('header nav a', { hasText: 'Locks' }).isVisible(), true)
      assert.equal(await page.locator('header nav a', { hasText: 'Schedule' }).isVisible(), false)
    } finally {
      await bare.stop()
    }
  })
})
