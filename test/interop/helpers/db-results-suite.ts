// The suite of test/interop/db-results-*.test.ts (one file per database, so each lane runs one). Issue 31, item 1: Celery's SQL result backend (`db+<sqlalchemy-url>`) on
// PostgreSQL, MariaDB and SQLite, both ways with Python Celery 5.2.6's
// database backend: a tsq worker's results read by a Python client's
// AsyncResult.get(), a Python worker's read by `tsq result` and tsq's
// AsyncResult; failures, result_extended columns, forget(), groups in
// celery_tasksetmeta, and a hostile pickle in the `result` column refused
// without running.
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { createApp, signature } from '../../../src/index.js'
import { DatabaseResultBackend } from '../../../src/backends/database-backend.js'
import { openSqlClient } from '../../../src/backends/sql-client.js'
import { REDIS_URL, brokerSkipReason, uniqueName } from '../../helpers/brokers.js'
import { createTestDatabase, databaseSkipReason, type DbKind, type TestDatabase } from '../../helpers/databases.js'
import { asJsInts, asPythonInts, intsJson, jsDigits, pythonRepr } from './bigints.js'
import { PY_DIR, PYTHON, parseJsonOut, run, runTsq, startPythonWorker, type PythonWorker } from './python-worker.js'
import { pyClient, startTsqWorker, type TsqWorker, type WiEnv } from '../worker-helpers/tsq-worker.js'

export async function dbResultsSuite(kind: DbKind): Promise<void> {
  const skip = (await brokerSkipReason('redis')) || (await databaseSkipReason(kind))
  describe(`db+ result backend on ${kind}, with Python Celery's database backend`, { skip }, () => {
    let db: TestDatabase
    let backendUrl = ''
    let tsqEnv: WiEnv
    let pyEnv: WiEnv
    let tsqWorker: TsqWorker | undefined
    let pyWorker: PythonWorker | undefined
    const scratch = mkdtempSync(join(tmpdir(), 'tsq-db-results-'))

    before(async () => {
      db = await createTestDatabase(kind, 'results')
      backendUrl = `db+${db.url}`
      tsqEnv = { broker: REDIS_URL, backend: backendUrl, queue: uniqueName('tsq-db-tsq') }
      pyEnv = { broker: REDIS_URL, backend: backendUrl, queue: uniqueName('tsq-db-py') }
      // The Python worker first: its SQLAlchemy creates the tables, so tsq meets Celery's own DDL.
      pyWorker = await startPythonWorker({ peer: pyEnv, concurrency: 1 })
      tsqWorker = await startTsqWorker({ env: tsqEnv, pool: 'threads', concurrency: 2, resultExtended: true })
    })

    after(async () => {
      await tsqWorker?.stop()
      await pyWorker?.stop()
      await db?.drop()
      rmSync(scratch, { recursive: true, force: true })
    })

    const withLog = (msg: string) => `${msg}\n--- tsq worker log ---\n${tsqWorker?.logTail() ?? ''}`

    it("a tsq worker's value and dict results: Python AsyncResult.get() reads them", async () => {
      const sum = await pyClient<{ result: unknown; state: string }>(tsqEnv, ['delay', 'proj.add', '[2, 2]', '20'])
      assert.deepEqual(sum, { result: 4, state: 'SUCCESS' }, withLog(JSON.stringify(sum)))
      const dict = await pyClient<{ result: unknown }>(tsqEnv, ['delay', 'proj.collect', '[{"sum": 5, "parts": [2, 3], "t": "é€"}]', '20'])
      assert.deepEqual(dict.result, { sum: 5, parts: [2, 3], t: 'é€' }, withLog(JSON.stringify(dict)))
    })

    it("a tsq worker's failure: Python get() raises it; result_extended fills name/args/kwargs/worker/queue", async () => {
      const sent = await pyClient<{ id: string }>(tsqEnv, ['send', 'proj.fail', '["boom from js"]'])
      const out = await pyClient<{ state: string; exc_type: string; exc_message: string }>(tsqEnv, ['get', sent.id, '20'])
      assert.equal(out.state, 'FAILURE', withLog(JSON.stringify(out)))
      assert.equal(out.exc_type, 'TypeError')
      assert.equal(out.exc_message, 'boom from js')
      const client = await openSqlClient(db.url)
      try {
        const [row] = await client.query('SELECT name, args, kwargs, worker, queue, traceback FROM celery_taskmeta WHERE task_id = ?', [
          sent.id,
        ])
        assert.ok(row, 'row written')
        assert.equal(row.name, 'proj.fail')
        assert.equal(Buffer.from(row.args as Uint8Array).toString('utf8'), '["boom from js"]')
        assert.equal(Buffer.from(row.kwargs as Uint8Array).toString('utf8'), '{}')
        assert.equal(row.worker, tsqWorker!.nodename)
        assert.equal(row.queue, tsqEnv.queue)
        assert.match(String(row.traceback), /boom from js/)
      } finally {
        await client.close()
      }
    })

    it("a Python worker's results: `tsq result` and tsq's AsyncResult read value and failure", async () => {
      const ok = await pyClient<{ id: string }>(pyEnv, ['send', 'proj.add', '[20, 22]'])
      const res = await runTsq(['result', ok.id, '--result-backend', backendUrl, '-t', '30'], { timeoutMs: 45_000 })
      assert.equal(res.code, 0, res.stderr)
      assert.equal(res.stdout.trim(), '42')
      const bad = await pyClient<{ id: string }>(pyEnv, ['send', 'proj.fail', '["boom from python"]'])
      const failed = await runTsq(['result', bad.id, '--result-backend', backendUrl, '-t', '30'], { timeoutMs: 45_000 })
      assert.equal(failed.code, 1, failed.stderr)
      assert.match(failed.stderr, /ValueError: boom from python/)
      const app = createApp({ broker: REDIS_URL, resultBackend: backendUrl })
      try {
        assert.equal(await app.asyncResult(ok.id).get({ timeout: 30 }), 42)
        await assert.rejects(
          app.asyncResult(bad.id).get({ timeout: 30 }),
          (e: Error) => e.name === 'ValueError' && /boom from python/.test(e.message),
        )
      } finally {
        await app.close()
      }
    })

    it('integers at every width edge to 10**40, both signs: the pickled result column keeps each an int, both ways', async () => {
      // Python's ints through the tsq worker: its pickle must hold ints (LONG1), not floats (2**70 was a BINFLOAT).
      const out = await pyClient<{ result?: unknown; id: string }>(tsqEnv, ['ints', 'proj.collect', intsJson(), '20'])
      assert.deepEqual(out.result, asPythonInts(), withLog(JSON.stringify(out)))
      const printed = await runTsq(['result', out.id, '--result-backend', backendUrl, '-t', '30'], { timeoutMs: 45_000 })
      assert.equal(printed.stdout.trim(), pythonRepr(), printed.stderr)
      // tsq's BigInts through the Python worker: tsq reads Python's pickle exact, and so does Python.
      const app = createApp({ broker: REDIS_URL, resultBackend: backendUrl })
      try {
        const r = await app.sendTask('proj.collect', [asJsInts()], {}, { queue: pyEnv.queue })
        assert.deepEqual(
          jsDigits(await r.get({ timeout: 30 })),
          asPythonInts().map(([, d]) => d),
          pyWorker?.logTail(),
        )
        const py = await pyClient<{ result?: unknown }>(pyEnv, ['read_ints', r.id, '20'])
        assert.deepEqual(py.result, asPythonInts())
      } finally {
        await app.close()
      }
    })

    it('forget(): tsq drops the row and Python then reads PENDING', async () => {
      const sent = await pyClient<{ id: string }>(tsqEnv, ['send', 'proj.add', '[1, 1]'])
      const app = createApp({ broker: REDIS_URL, resultBackend: backendUrl })
      try {
        assert.equal(await app.asyncResult(sent.id).get({ timeout: 30 }), 2, withLog('no result'))
        await app.asyncResult(sent.id).forget()
      } finally {
        await app.close()
      }
      const out = await pyClient<{ state: string }>(tsqEnv, ['get', sent.id, '0'])
      assert.equal(out.state, 'PENDING')
    })

    it("groups in celery_tasksetmeta: each side restores the other's GroupResult", async () => {
      const py = (args: string[]) =>
        run(PYTHON, [resolve(PY_DIR, 'db_groups.py'), ...args], {
          cwd: PY_DIR,
          env: { ...process.env, PYTHONPATH: PY_DIR, TSQ_WI_BROKER: REDIS_URL, TSQ_WI_BACKEND: backendUrl, TSQ_WI_QUEUE: pyEnv.queue },
        })
      const backend = new DatabaseResultBackend(db.url)
      try {
        const saved = await py(['save', 'g-py', 'a1,a2,a3'])
        assert.equal(saved.code, 0, saved.stderr)
        assert.deepEqual(await backend.restoreGroup('g-py'), ['a1', 'a2', 'a3'])
        await backend.saveGroup('g-tsq', ['b1', 'b2'])
        const restored = await py(['restore', 'g-tsq'])
        assert.deepEqual(parseJsonOut(restored, 'db_groups.py'), { id: 'g-tsq', type: 'GroupResult', ids: ['b1', 'b2'] })
      } finally {
        await backend.close()
      }
    })

    it('chords from Python: the header and celery.chord_unlock run on the tsq worker, the body gets the values', async () => {
      const out = await pyClient<{ result: unknown; body: { state: string } }>(tsqEnv, ['chord', '4', '60'], 90_000)
      assert.equal(out.result, 12, withLog(JSON.stringify(out)))
      assert.equal(out.body.state, 'SUCCESS')
    })

    it('a chord whose header task fails: the body fails with ChordError naming the dependency', async () => {
      const out = await pyClient<{ exc_type: string; body: { state: string; exc_type: string; exc_message: string } }>(
        tsqEnv,
        ['chord', '3', '60', '1'],
        90_000,
      )
      assert.equal(out.body.state, 'FAILURE', withLog(JSON.stringify(out)))
      assert.equal(out.body.exc_type, 'ChordError')
      assert.match(out.body.exc_message, /Dependency .* raised TypeError\('chord part failed'\)/)
    })

    it('chords from tsq to a Python worker: celery.chord_unlock as Celery sends it', async () => {
      const app = createApp({ broker: REDIS_URL, resultBackend: backendUrl })
      try {
        const add = (x: number, y: number) => signature('proj.add', [x, y], {}, { queue: pyEnv.queue })
        const r = await app.chord([add(1, 1), add(2, 2), add(3, 3)], signature('proj.tsum', [], {}, { queue: pyEnv.queue }))
        assert.equal(await r.get({ timeout: 60 }), 12, pyWorker?.logTail())
      } finally {
        await app.close()
      }
    })

    it('a __reduce__ pickle in the result column is refused in one line and nothing runs', async () => {
      const marker = join(scratch, 'pwned')
      const evil = await run(PYTHON, [
        '-c',
        `import os, pickle, sys\nclass E:\n    def __reduce__(self):\n        return (os.system, ('touch ' + sys.argv[1],))\nsys.stdout.write(pickle.dumps(E(), protocol=5).hex())`,
        marker,
      ])
      assert.equal(evil.code, 0, evil.stderr)
      const client = await openSqlClient(db.url)
      const taskId = uniqueName('evil')
      try {
        // PostgreSQL and MariaDB number rows from Celery's sequence; SQLite auto-increments.
        const id = kind === 'postgresql' ? "nextval('task_id_sequence'), " : kind === 'mysql' ? 'NEXTVAL(task_id_sequence), ' : ''
        await client.query(`INSERT INTO celery_taskmeta (${id ? 'id, ' : ''}task_id, status, result) VALUES (${id}?, 'SUCCESS', ?)`, [
          taskId,
          Buffer.from(evil.stdout, 'hex'),
        ])
      } finally {
        await client.close()
      }
      const res = await runTsq(['result', taskId, '--result-backend', backendUrl, '-t', '5'], { timeoutMs: 30_000 })
      assert.notEqual(res.code, 0)
      const lines = res.stderr.trim().split('\n')
      assert.equal(lines.length, 1, res.stderr)
      assert.match(lines[0]!, /refusing a pickle that holds STACK_GLOBAL/)
      assert.equal(existsSync(marker), false, 'the payload ran')
    })

    it("the connection string's password is masked in errors", async () => {
      if (kind === 'sqlite') return
      const secret = 's3cr3t-pw'
      const url =
        kind === 'postgresql' ? `db+postgresql://nobody_here:${secret}@127.0.0.1/nope` : `db+mysql://nobody_here:${secret}@127.0.0.1/nope`
      const res = await runTsq(['result', 'x', '--result-backend', url, '-t', '1'], { timeoutMs: 30_000 })
      assert.notEqual(res.code, 0)
      assert.ok(!`${res.stdout}${res.stderr}`.includes(secret), res.stderr)
      assert.match(res.stderr, /nobody_here:\*\*@127\.0\.0\.1/)
    })
  })
}
