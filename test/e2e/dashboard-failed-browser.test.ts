// tsq-test: slow
// The dashboard's Failed page in headless Chromium, on the embedded broker
// and its file:// results: a task that failed on a tsq worker is listed (with
// its exception, worker and "message" replay), a filter that matches nothing
// empties the table, and the row's Retry sends the kept message again: the
// task runs again under its own id and its result becomes SUCCESS.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { BrowserContext, Page } from 'playwright-core'
import { callTask, embeddedBrokerEnv, ROOT, startWorker, taskResult, tempTsqHome, type SpawnedWorker } from '../helpers/cli.js'
import { CHROMIUM, CHROMIUM_ARGS, chromiumSkipReason, startDashboard, type SpawnedDashboard } from '../helpers/dashboard.js'
import { waitFor } from '../helpers/brokers.js'

const skip = chromiumSkipReason()

describe("tsq dashboard: the Failed page lists a tsq worker's failure and retries it", { skip, timeout: 180_000 }, () => {
  const profile = mkdtempSync(join(tmpdir(), 'tsq-dash-chromium-'))
  const marks = mkdtempSync(join(tmpdir(), 'tsq-failed-marks-'))
  const env = embeddedBrokerEnv(tempTsqHome(), { TSQ_FR_MARKS: marks })
  let worker: SpawnedWorker | undefined
  let dashboard: SpawnedDashboard | undefined
  let context: BrowserContext | undefined
  let page: Page
  let id: string

  before(async () => {
    worker = await startWorker(['-A', join(ROOT, 'test/fixtures/tasks/failed-replay-tasks.js'), '-P', 'solo', '-l', 'INFO'], {
      env,
      nodename: 'failed-page@h',
    })
    // Not what the fixture expects from Python: the run fails, and the next one returns where the values differ.
    id = await callTask(env, 'proj.exact_or_fail', ['x'], ['--kwargs', '{"variant": "json"}'])
    assert.equal((await taskResult(env, id)).status, 'FAILURE')
    dashboard = await startDashboard([], { env })
    const { chromium } = await import('playwright-core')
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS })
    page = context.pages()[0] ?? (await context.newPage())
    page.on('dialog', (dialog) => void dialog.accept())
  })

  after(async () => {
    await context?.close().catch(() => undefined)
    await Promise.all([worker?.stop(), dashboard?.stop()])
    rmSync(profile, { recursive: true, force: true })
    rmSync(marks, { recursive: true, force: true })
  })

  it('lists the failure, filters, and retries it from its row', async () => {
    await page.goto(`${dashboard!.url}/failed`)
    const row = page.locator(`#failed tr[data-id="${id}"]`)
    await row.waitFor({ timeout: 20_000 })
    const cells = await row.locator('td').allTextContents()
    assert.equal(cells[1], 'proj.exact_or_fail')
    assert.match(cells[2]!, /first run fails on purpose/)
    assert.equal(cells[3], 'failed-page@h')
    assert.equal(cells[5], 'message')
    await page.fill('#failed-filters input[name=exception]', 'no such exception')
    await page.click('#failed-filters button[type=submit]')
    await page.locator('#failed td.muted', { hasText: 'No failed tasks.' }).waitFor({ timeout: 10_000 })
    await page.fill('#failed-filters input[name=exception]', 'ON PURPOSE')
    await page.click('#failed-filters button[type=submit]')
    await row.locator('button[data-action=retry]').click()
    const reply = JSON.parse((await page.locator('pre[data-result=retry]').textContent({ timeout: 10_000 })) ?? '{}') as {
      retried: { taskId: string; how: string }[]
    }
    assert.deepEqual(
      reply.retried.map((r) => [r.taskId, r.how]),
      [[id, 'message']],
    )
    await waitFor(async () => (await taskResult(env, id)).status === 'SUCCESS', { timeoutMs: 30_000, what: 'the retried task to succeed' })
  })
})
