// `tsq result` opens the result backend with the app's database_* settings
// (here database_table_names), as the worker that stored the result did: a
// result in a renamed table is found through -A, and the default table names
// (no -A) do not see it.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import Database from 'better-sqlite3'
import { createApp } from '../../src/app/app.js'
import { encodeResultMeta } from '../../src/protocol/index.js'
import { ROOT, runTsq } from '../helpers/cli.js'

const FIXTURE = join(ROOT, 'test/fixtures/tasks/db-table-names-tasks.js')

describe('tsq result with -A: the app database_* settings', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-result-db-'))
  const file = join(dir, 'results.db')
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('reads the result from the table the app names', async () => {
    const app = createApp({
      name: 'proj',
      broker: 'file:///nonexistent-unused',
      resultBackend: `db+sqlite:///${file}`,
      conf: { database_table_names: { task: 'proj_taskmeta', group: 'proj_groupmeta' } },
    })
    const id = randomUUID()
    const backend = await app.backend()
    await backend.store(id, encodeResultMeta({ taskId: id, status: 'SUCCESS', result: { sum: 5 } }), 'SUCCESS')
    await app.close()
    const tables = new Database(file, { readonly: true })
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all() as { name: string }[]
    assert.ok(
      tables.some((t) => t.name === 'proj_taskmeta'),
      `tables: ${JSON.stringify(tables)}`,
    )
    assert.ok(!tables.some((t) => t.name === 'celery_taskmeta'), 'the default table was not used')

    const env = { TSQ_FIXTURE_SQLITE: file }
    const viaApp = await runTsq(['-A', FIXTURE, 'result', id, '--json'], { env })
    assert.equal(viaApp.code, 0, viaApp.stderr)
    assert.deepEqual(JSON.parse(viaApp.stdout).result, { sum: 5 })

    // Without the app, Celery's default table is read: the result is not there, so the wait times out.
    const plain = await runTsq(['--result-backend', `db+sqlite:///${file}`, 'result', id, '--json', '-t', '1'], { env })
    assert.notEqual(plain.code, 0, plain.stdout)
    assert.doesNotMatch(plain.stdout, /"sum"/)
  })
})
