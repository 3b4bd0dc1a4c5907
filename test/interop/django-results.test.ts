// tsq-test: slow
// django-celery-results' `django-db` backend. The test makes
// a database, runs Debian's Django `migrate` with a minimal settings module
// (test/fixtures/django), then: a tsq worker's results are rows the Django ORM
// reads (`TaskResult.objects.get(task_id=...)`) and Python's AsyncResult
// gets; a Python worker's results are read by `tsq result`; integers at every
// width edge and past 2**53 arrive exact both ways.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { createApp } from '../../src/index.js'
import { REDIS_URL, brokerSkipReason, uniqueName } from '../helpers/brokers.js'
import { createTestDatabase, databaseSkipReason, type DbKind, type TestDatabase } from '../helpers/databases.js'
import { GroupProcess, sleep } from '../helpers/process-group.js'
import { BOUNDARY_INTS, asJsInts, asPythonInts, intsJson, jsDigits, pythonRepr } from './helpers/bigints.js'
import { PYTHON, REPO_ROOT, parseJsonOut, run, runTsq, uniqueNodeName } from './helpers/python-worker.js'
import { startTsqWorker, type TsqWorker, type WiEnv } from './worker-helpers/tsq-worker.js'

class PythonDjangoWorker extends GroupProcess {
  stop(): Promise<void> {
    return this.stopWith(() => this.signalGroup('SIGTERM'), 10_000)
  }
}

const DJANGO_DIR = resolve(REPO_ROOT, 'test/fixtures/django')
const redisSkip = await brokerSkipReason('redis')
const djangoSkip =
  (await run(PYTHON, ['-c', 'import django, django_celery_results, sqlalchemy'])).code === 0
    ? false
    : process.env.CI
      ? (() => {
          throw new Error('CI requires python3-django-celery-results')
        })()
      : 'python3-django-celery-results not installed'

for (const kind of ['postgresql', 'sqlite'] as DbKind[]) {
  const skip = redisSkip || djangoSkip || (await databaseSkipReason(kind))
  describe(`django-db results on ${kind}, with django-celery-results`, { skip }, () => {
    let db: TestDatabase
    let tsqEnv: WiEnv
    let pyQueue: string
    let tsqWorker: TsqWorker | undefined
    let pyWorker: PythonDjangoWorker | undefined
    const pyEnv = () => ({
      ...process.env,
      PYTHONPATH: DJANGO_DIR,
      PYTHONDONTWRITEBYTECODE: '1',
      DJANGO_SETTINGS_MODULE: 'tsq_django_settings',
      TSQ_DJANGO_DB: JSON.stringify(db.django),
      TSQ_WI_BROKER: REDIS_URL,
    })
    const py = async (args: string[], queue = tsqEnv.queue) => {
      const res = await run(PYTHON, [resolve(DJANGO_DIR, 'tsq_django_app.py'), ...args], {
        cwd: DJANGO_DIR,
        env: { ...pyEnv(), TSQ_WI_QUEUE: queue },
        timeoutMs: 60_000,
      })
      return parseJsonOut(res, `tsq_django_app.py ${args[0]}`) as Record<string, unknown>
    }

    before(async () => {
      db = await createTestDatabase(kind, 'django')
      const migrate = await run(PYTHON, ['-m', 'django', 'migrate', '-v', '0'], { cwd: DJANGO_DIR, env: pyEnv(), timeoutMs: 120_000 })
      assert.equal(migrate.code, 0, `migrate failed:\n${migrate.stderr}`)
      tsqEnv = { broker: REDIS_URL, backend: 'django-db', queue: uniqueName('tsq-dj-tsq') }
      pyQueue = uniqueName('tsq-dj-py')
      process.env.DATABASE_URL = db.url
      tsqWorker = await startTsqWorker({ env: tsqEnv, pool: 'threads', concurrency: 2, resultExtended: true })
      const node = uniqueNodeName('pydj')
      const child = spawn(
        PYTHON,
        [
          '-m',
          'celery',
          '-A',
          'tsq_django_app',
          'worker',
          '-n',
          node,
          '-c',
          '1',
          '-P',
          'solo',
          '-Q',
          pyQueue,
          '--without-gossip',
          '--without-mingle',
          '-l',
          'INFO',
        ],
        { cwd: DJANGO_DIR, env: pyEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true },
      )
      pyWorker = new PythonDjangoWorker(child)
      const deadline = Date.now() + 60_000
      while (!/\bready\.\s*$/m.test(pyWorker.log)) {
        if (pyWorker.hasExited || Date.now() > deadline) throw new Error(`Python worker did not start:\n${pyWorker.logTail()}`)
        await sleep(100)
      }
    })

    after(async () => {
      delete process.env.DATABASE_URL
      await tsqWorker?.stop()
      await pyWorker?.stop()
      await db?.drop()
    })

    const send = async (name: string, args: unknown[], queue: string) => {
      const res = await run(
        PYTHON,
        [
          '-c',
          `import json, sys\nfrom tsq_django_app import app\nprint(json.dumps({'id': app.send_task(sys.argv[1], args=json.loads(sys.argv[2])).id}))`,
          name,
          JSON.stringify(args),
        ],
        { cwd: DJANGO_DIR, env: { ...pyEnv(), TSQ_WI_QUEUE: queue } },
      )
      return (parseJsonOut(res, 'send') as { id: string }).id
    }

    it("a tsq worker's result is a TaskResult row the Django ORM reads, and Python gets it", async () => {
      const id = await send('proj.add', [2, 3], tsqEnv.queue)
      const got = await py(['get', id, '30'])
      assert.deepEqual(got, { result: 5, state: 'SUCCESS' }, tsqWorker?.logTail())
      const row = await py(['orm', id])
      assert.equal(row.status, 'SUCCESS')
      assert.equal(row.result, '5')
      assert.equal(row.content_type, 'application/json')
      assert.equal(row.content_encoding, 'utf-8')
      assert.equal(row.task_name, 'proj.add')
      assert.equal(row.task_args, '"(2, 3)"')
      assert.equal(row.task_kwargs, '"{}"')
      assert.equal(row.worker, tsqWorker!.nodename)
      assert.equal(row.meta, '{"children": []}')
      assert.ok(row.date_done && row.date_created)
    })

    it("a tsq worker's failure: the exception meta in the row, Python re-raises it", async () => {
      const id = await send('proj.fail', ['boom from js'], tsqEnv.queue)
      const got = await py(['get', id, '30'])
      assert.equal(got.state, 'FAILURE', tsqWorker?.logTail())
      assert.equal(got.exc_type, 'TypeError')
      assert.equal(got.exc_message, 'boom from js')
      const row = await py(['orm', id])
      assert.deepEqual(JSON.parse(String(row.result)), { exc_type: 'TypeError', exc_message: ['boom from js'], exc_module: 'builtins' })
    })

    it("a Python worker's results are read by `tsq result`", async () => {
      const env = { DATABASE_URL: db.url }
      const ok = await send('proj.add', [20, 22], pyQueue)
      const res = await runTsq(['result', ok, '--result-backend', 'django-db', '-t', '30'], { env, timeoutMs: 45_000 })
      assert.equal(res.code, 0, `${res.stderr}\n${pyWorker?.logTail()}`)
      assert.equal(res.stdout.trim(), '42')
      const bad = await send('proj.fail', ['boom from python'], pyQueue)
      const failed = await runTsq(['result', bad, '--result-backend', 'django-db', '-t', '30'], { env, timeoutMs: 45_000 })
      assert.equal(failed.code, 1, failed.stderr)
      assert.match(failed.stderr, /ValueError: boom from python/)
    })

    it('integers at every width edge to 10**40, both signs: each an int, digit for digit, both ways', async () => {
      const values = BOUNDARY_INTS.map(String)
      // Python's ints through the tsq worker, read by Python (django-celery-results' JSON) and by `tsq result`.
      const id = await run(
        PYTHON,
        [
          '-c',
          `import json, sys\nfrom tsq_django_app import app\nprint(json.dumps({'id': app.send_task('proj.collect', args=[json.loads(sys.argv[1])]).id}))`,
          intsJson(),
        ],
        { cwd: DJANGO_DIR, env: { ...pyEnv(), TSQ_WI_QUEUE: tsqEnv.queue } },
      )
      const sent = (parseJsonOut(id, 'send') as { id: string }).id
      const got = await py(['get', sent, '30', 'shapes'])
      assert.deepEqual(got.result, asPythonInts(), `${JSON.stringify(got)}\n${tsqWorker?.logTail()}`)
      const printed = await runTsq(['result', sent, '--result-backend', 'django-db', '-t', '30'], {
        env: { DATABASE_URL: db.url },
        timeoutMs: 45_000,
      })
      assert.equal(printed.stdout.trim(), pythonRepr(), printed.stderr)
      // tsq's BigInts through the Python worker, read by tsq.
      const app = createApp({ broker: REDIS_URL, resultBackend: 'django-db' })
      try {
        const r = await app.sendTask('proj.collect', [asJsInts()], {}, { queue: pyQueue })
        assert.deepEqual(jsDigits(await r.get({ timeout: 30 })), values, pyWorker?.logTail())
        assert.deepEqual((await py(['get', r.id, '5', 'shapes'])).result, asPythonInts())
      } finally {
        await app.close()
      }
    })

    it('without a database URL, django-db says what it needs in one line', async () => {
      const env = { ...process.env, DATABASE_URL: '' }
      const res = await runTsq(['result', 'x', '--result-backend', 'django-db', '-t', '1'], { env, timeoutMs: 30_000 })
      assert.notEqual(res.code, 0)
      assert.match(
        res.stderr.trim(),
        /^Error: the django-db result backend needs the Django database: set database_url in the config, or DATABASE_URL/,
      )
    })
  })
}
