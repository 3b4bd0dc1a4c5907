// A result Python Celery stored in a db+sqlite backend whose pickle is a
// reference bomb (164 bytes, 25 levels of `x = [x, x]`): `tsq result` refuses
// it with one line and a non-zero exit, and the dashboard's result API answers
// at once saying it is refused (a 502), not blocking; a small shared result
// still reads.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { runTsq } from '../helpers/cli.js'
import { startDashboard, type SpawnedDashboard } from '../helpers/dashboard.js'

const PYTHON = '/usr/bin/python3'
const hasCelery = spawnSync(PYTHON, ['-c', 'import celery, sqlalchemy'], { stdio: 'ignore' }).status === 0
const skip = hasCelery ? false : 'Python Celery with SQLAlchemy not installed; skipping'
if (skip && process.env.CI) throw new Error(`CI requires ${skip}`)

describe('a pickled reference bomb in a SQL result', { skip, timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-pickle-bomb-'))
  const backend = `db+sqlite:///${join(dir, 'results.db')}`
  const broker = `file://${join(dir, 'broker')}`
  let dashboard: SpawnedDashboard | undefined

  before(async () => {
    const script = [
      'import sys',
      'from celery import Celery',
      'app = Celery(broker="memory://", backend=sys.argv[1])',
      'x = []',
      'for _ in range(25): x = [x, x]',
      'app.backend.store_result("bomb-25", x, "SUCCESS")',
      'y = []',
      'for _ in range(21): y = [y, y]',
      'app.backend.store_result("bomb-21", y, "SUCCESS")',
      'app.backend.store_result("shared-small", [[1, 2]] * 3, "SUCCESS")',
    ].join('\n')
    const py = spawnSync(PYTHON, ['-c', script, backend], { encoding: 'utf8' })
    assert.equal(py.status, 0, py.stderr)
    dashboard = await startDashboard(['-b', broker, '--result-backend', backend])
  })

  after(async () => {
    await dashboard?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('tsq result refuses it with one line and exit 1, within a bounded wait', async () => {
    for (const id of ['bomb-25', 'bomb-21']) {
      const out = await runTsq(['result', '-b', broker, '--result-backend', backend, id], { timeoutMs: 30_000 })
      assert.equal(out.code, 1, out.stderr)
      assert.equal(out.stdout, '')
      assert.match(out.stderr, /^Error: refusing a pickle that expands to more than 1000000 values .*\n$/)
    }
    const fine = await runTsq(['result', '-b', broker, '--result-backend', backend, 'shared-small'], { timeoutMs: 30_000 })
    assert.equal(fine.code, 0, fine.stderr)
    assert.equal(fine.stdout.trim(), '[[1, 2], [1, 2], [1, 2]]')
  })

  it('the dashboard answers the result API at once: refused, and goes on serving', async () => {
    for (const path of ['/api/task/result/bomb-25', '/api/task/result/bomb-21?timeout=5']) {
      const res = await fetch(`${dashboard!.url}${path}`, { signal: AbortSignal.timeout(20_000) })
      assert.equal(res.status, 502)
      const body = (await res.json()) as { error: string }
      assert.match(body.error, /the stored result of 'bomb-2\d' is refused: refusing a pickle that expands/)
    }
    const fine = (await (await fetch(`${dashboard!.url}/api/task/result/shared-small`)).json()) as Record<string, unknown>
    assert.deepEqual(fine, {
      'task-id': 'shared-small',
      state: 'SUCCESS',
      result: [
        [1, 2],
        [1, 2],
        [1, 2],
      ],
    })
    assert.equal((await fetch(`${dashboard!.url}/healthcheck`)).status, 200)
  })
})
