// The suite of test/interop/django-beat-*.test.ts (one file per database, so each lane runs one):
// `tsq beat --scheduler django` on django-celery-beat's tables. The suite makes a database, runs Debian's
// Django `migrate` with the minimal settings module (test/fixtures/django), changes PeriodicTask rows
// through the Django ORM (tsq_django_beat.py) as the admin would, and checks:
// a new row is sent and run by a worker; interval changes and disabling are
// taken up without a restart; a one_off row runs once and is disabled; the
// rows' total_run_count and last_run_at are what Python's DatabaseScheduler
// writes for the same schedule; two tsq beats on one database send each run
// once (with and without the lease).
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { REDIS_URL, brokerSkipReason, uniqueName, waitFor } from '../../helpers/brokers.js'
import { createTestDatabase, databaseSkipReason, type DbKind, type TestDatabase } from '../../helpers/databases.js'
import { GroupProcess, sleep } from '../../helpers/process-group.js'
import { PYTHON, REPO_ROOT, TSQ_BIN, parseJsonOut, run } from './python-worker.js'
import { startTsqWorker, type TsqWorker } from '../worker-helpers/tsq-worker.js'

const DJANGO_DIR = resolve(REPO_ROOT, 'test/fixtures/django')
const redisSkip = await brokerSkipReason('redis')
const djangoSkip =
  (await run(PYTHON, ['-c', 'import django, django_celery_beat, celery'])).code === 0
    ? false
    : process.env.CI
      ? (() => {
          throw new Error('CI requires python3-django-celery-beat')
        })()
      : 'python3-django-celery-beat not installed'

/** A scheduler process (tsq beat or Python's celery beat): TERM, as an operator stops it. */
class BeatProcess extends GroupProcess {
  stop(): Promise<void> {
    return this.stopWith(() => this.signalGroup('SIGTERM'), 15_000)
  }

  sends(name: string): number {
    return this.log.split('\n').filter((line) => line.includes(`Sending due task ${name} (`)).length
  }

  changes(): number {
    return this.log.split('\n').filter((line) => line.includes('DatabaseScheduler: Schedule changed.')).length
  }
}

interface OrmRow {
  name: string
  enabled: boolean
  one_off: boolean
  total_run_count: number
  last_run_at: string | null
}

export async function djangoBeatSuite(kind: DbKind): Promise<void> {
  const skip = redisSkip || djangoSkip || (await databaseSkipReason(kind))
  describe(`tsq beat --scheduler django on ${kind}, with django-celery-beat`, { skip }, () => {
    let db: TestDatabase
    let redis: Redis
    let worker: TsqWorker | undefined
    const workerQueue = uniqueName('tsq-djb-w')
    const running = new Set<BeatProcess>()
    const pyEnv = () => ({
      ...process.env,
      PYTHONPATH: DJANGO_DIR,
      PYTHONDONTWRITEBYTECODE: '1',
      DJANGO_SETTINGS_MODULE: 'tsq_django_settings',
      TSQ_DJANGO_DB: JSON.stringify(db.django),
      TSQ_WI_BROKER: REDIS_URL,
    })
    const orm = async (...args: string[]): Promise<OrmRow> => {
      const res = await run(PYTHON, [resolve(DJANGO_DIR, 'tsq_django_beat.py'), ...args], {
        cwd: DJANGO_DIR,
        env: pyEnv(),
        timeoutMs: 60_000,
      })
      return parseJsonOut(res, `tsq_django_beat.py ${args[0]}`) as OrmRow
    }
    const create = (spec: Record<string, unknown>) => orm('create', JSON.stringify(spec))
    const set = (name: string, fields: Record<string, unknown>) => orm('set', name, JSON.stringify(fields))

    const track = (child: ReturnType<typeof spawn>): BeatProcess => {
      const p = new BeatProcess(child)
      running.add(p)
      return p
    }
    const startTsqBeat = async (extra: string[] = []): Promise<BeatProcess> => {
      const child = spawn(
        process.execPath,
        [TSQ_BIN, 'beat', '-b', REDIS_URL, '-S', 'django', '--database-url', db.url, '-l', 'DEBUG', ...extra],
        { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
      )
      const beat = track(child)
      await waitFor(() => beat.log.includes('beat: Starting...') || beat.hasExited, { timeoutMs: 30_000, what: 'tsq beat to start' })
      assert.ok(!beat.hasExited, `tsq beat exited:\n${beat.logTail()}`)
      return beat
    }
    const startPythonBeat = async (): Promise<BeatProcess> => {
      // Each run written as it is sent (beat_sync_every = 1), as tsq does: Python's write at exit, from its
      // TERM handler, met "database is locked" on SQLite.
      const child = spawn(
        PYTHON,
        ['-m', 'celery', '-A', 'tsq_django_app', 'beat', '-S', 'django_celery_beat.schedulers:DatabaseScheduler', '-l', 'INFO'],
        { cwd: DJANGO_DIR, env: { ...pyEnv(), TSQ_DJ_BEAT_SYNC_EVERY: '1' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
      )
      const beat = track(child)
      await waitFor(() => beat.log.includes('beat: Starting...') || beat.hasExited, { timeoutMs: 60_000, what: 'Python beat to start' })
      assert.ok(!beat.hasExited, `celery beat exited:\n${beat.logTail()}`)
      return beat
    }
    const stop = async (beat: BeatProcess) => {
      await beat.stop()
      running.delete(beat)
    }
    /** The queue's length each 100 ms, with when it grew: a message's arrival, seen from outside. */
    const watchQueue = (queue: string) => {
      const arrivals: number[] = []
      let stopped = false
      const loop = (async () => {
        while (!stopped) {
          const n = await redis.llen(queue)
          while (arrivals.length < n) arrivals.push(Date.now())
          await sleep(100)
        }
      })()
      return {
        arrivals,
        stop: async () => {
          stopped = true
          await loop
        },
      }
    }

    before(async () => {
      db = await createTestDatabase(kind, 'djbeat')
      const migrate = await run(PYTHON, ['-m', 'django', 'migrate', '-v', '0'], { cwd: DJANGO_DIR, env: pyEnv(), timeoutMs: 180_000 })
      assert.equal(migrate.code, 0, `migrate failed:\n${migrate.stderr}`)
      redis = new Redis(REDIS_URL, { lazyConnect: true })
      await redis.connect()
      worker = await startTsqWorker({ env: { broker: REDIS_URL, backend: REDIS_URL, queue: workerQueue }, pool: 'threads', concurrency: 2 })
    })

    after(async () => {
      for (const beat of running) await beat.stop()
      await worker?.stop()
      await redis?.quit().catch(() => undefined)
      await db?.drop()
    })

    it('a PeriodicTask created through the ORM is sent and run by a worker; interval changes and disabling are taken up without a restart', async () => {
      const beat = await startTsqBeat()
      const name = uniqueName('djb-a')
      const succeeded = () => (worker!.log.match(/Task proj\.add\[[^\]]+\] succeeded in [^:]+: 5\b/g) ?? []).length
      await create({ name, task: 'proj.add', interval: [1, 'seconds'], args: [2, 3], queue: workerQueue })
      // Python's ModelEntry takes "now" as a new row's last run: sent one interval after the beat sees it.
      await waitFor(() => succeeded() >= 1, {
        timeoutMs: 30_000,
        what: `a worker to run ${name}'s task\n${beat.logTail()}\n${worker!.logTail()}`,
      })
      assert.ok(beat.sends(name) >= 1)
      const first = await orm('row', name)
      assert.ok(first.total_run_count >= 1 && first.last_run_at !== null, JSON.stringify(first))

      let seen = beat.changes()
      const changed = async () => {
        await waitFor(() => beat.changes() > seen, { timeoutMs: 30_000, what: `beat to take up the change\n${beat.logTail()}` })
        seen = beat.changes()
      }
      await set(name, { interval: [1, 'hours'] })
      await changed()
      const quiet = beat.sends(name)
      await sleep(3000)
      assert.equal(beat.sends(name), quiet, 'every hour now: no more sends')

      await set(name, { interval: [1, 'seconds'] })
      await changed()
      await waitFor(() => beat.sends(name) > quiet + 1, { timeoutMs: 30_000, what: `sends to resume at every second\n${beat.logTail()}` })

      await set(name, { enabled: false })
      await changed()
      const disabled = beat.sends(name)
      await sleep(3000)
      assert.equal(beat.sends(name), disabled, 'disabled: no more sends')
      const row = await orm('row', name)
      assert.equal(row.enabled, false)
      assert.equal(row.last_run_at, null, 'PeriodicTask.save clears last_run_at of a disabled task')
      await stop(beat)
      assert.equal(beat.log.match(/ERROR|Traceback/), null, beat.logTail())
    })

    it('a one_off task runs once and is then disabled, as DatabaseScheduler leaves it', async () => {
      const beat = await startTsqBeat()
      const name = uniqueName('djb-once')
      const queue = uniqueName('tsq-djb-once')
      await create({ name, task: 'proj.add', interval: [1, 'seconds'], args: [1, 1], queue, one_off: true })
      await waitFor(async () => !(await orm('row', name)).enabled, {
        timeoutMs: 40_000,
        intervalMs: 500,
        what: `${name} to be disabled\n${beat.logTail()}`,
      })
      await sleep(2500)
      await stop(beat)
      assert.equal(beat.sends(name), 1, beat.logTail())
      assert.equal(await redis.llen(queue), 1)
      const row = await orm('row', name)
      assert.deepEqual([row.enabled, row.total_run_count, row.last_run_at], [false, 0, null])
      await redis.del(queue)
    })

    it("total_run_count and last_run_at are written as Python's DatabaseScheduler writes them", async () => {
      // One scheduler at a time: each sends every enabled row of the database.
      const measure = async (who: 'python' | 'tsq') => {
        const name = uniqueName(`djb-${who}`)
        const queue = uniqueName(`tsq-djb-${who}`)
        await create({ name, task: 'proj.add', interval: [2, 'seconds'], args: [4, 4], queue })
        const watch = watchQueue(queue)
        const beat = who === 'python' ? await startPythonBeat() : await startTsqBeat()
        await waitFor(() => watch.arrivals.length >= 3, { timeoutMs: 60_000, what: `3 sends of ${name}\n${beat.logTail()}` })
        // Python writes its runs every 3 minutes and when it stops (sync); both are read after a stop.
        await stop(beat)
        await sleep(300)
        await watch.stop()
        const row = await orm('row', name)
        await set(name, { enabled: false })
        const raw = await rawLastRunAt(db, name)
        await redis.del(queue)
        return { row, sent: watch.arrivals.length, arrivals: [...watch.arrivals], raw, log: beat.logTail() }
      }
      const py = await measure('python')
      const ts = await measure('tsq')
      // tsq writes each run before it sends it: its count is the sends, exactly. Python's scheduler saves
      // its entries in a sync that can miss the last run before the stop (seen on PostgreSQL and MariaDB
      // under load: 3 sent, 2 counted); its row is then that of the run before, which is still what is
      // compared: the count of runs it saved, and last_run_at of the last of them.
      assert.equal(ts.row.total_run_count, ts.sent, `tsq: one count per run sent\n${ts.log}`)
      assert.ok(
        py.row.total_run_count >= py.sent - 1 && py.row.total_run_count <= py.sent,
        `python: ${py.row.total_run_count} counted for ${py.sent} sent\n${py.log}`,
      )
      for (const [who, m] of [
        ['python', py],
        ['tsq', ts],
      ] as const) {
        assert.match(m.row.last_run_at ?? '', /\+00:00$/, `${who}: an aware UTC datetime`)
        const at = Date.parse(m.row.last_run_at!)
        const counted = m.arrivals[m.row.total_run_count - 1]!
        // last_run_at is taken just before the send; the queue is read every 100 ms.
        assert.ok(
          at <= counted && counted - at < 1500,
          `${who}: last_run_at ${m.row.last_run_at} vs the send it counts, seen at ${new Date(counted).toISOString()}`,
        )
      }
      // The column itself holds the same kind of value (naive UTC text on MySQL and SQLite, an instant on PostgreSQL).
      assert.equal(shape(ts.raw), shape(py.raw), `raw columns: python ${py.raw}, tsq ${ts.raw}`)
    })

    it("a solar row is sent at its sun event, and Python's DatabaseScheduler agrees on the next one", async () => {
      const name = uniqueName('djb-solar')
      const queue = uniqueName('tsq-djb-solar')
      // Last run two days ago: the solar noon after it has passed, so the row is due at once, as in Python.
      const lastRunAt = new Date(Date.now() - 2 * 86_400_000).toISOString()
      await create({
        name,
        task: 'proj.add',
        solar: { event: 'solar_noon', latitude: 51.5, longitude: -0.12 },
        args: [6, 6],
        queue,
        last_run_at: lastRunAt,
      })
      const beat = await startTsqBeat()
      await waitFor(async () => (await redis.llen(queue)) >= 1, { timeoutMs: 30_000, what: `${name} to be sent\n${beat.logTail()}` })
      await sleep(3000)
      await stop(beat)
      assert.equal(beat.sends(name), 1, beat.logTail())
      assert.equal(beat.log.match(/ERROR|Traceback|skipped/), null, beat.logTail())
      const row = await orm('row', name)
      assert.equal(row.total_run_count, 1)
      // Python's beat on the same row: its next solar noon is after tsq's run, so it sends nothing now.
      const py = await startPythonBeat()
      await sleep(4000)
      await stop(py)
      assert.equal(py.sends(name), 0, py.logTail())
      assert.equal(py.log.match(/Traceback/), null, py.logTail())
      assert.equal(await redis.llen(queue), 1)
      await set(name, { enabled: false })
      await redis.del(queue)
    })

    for (const ha of ['none', 'lease'] as const) {
      it(`two tsq beats on one database send each run once (--ha ${ha})`, async () => {
        const name = uniqueName(`djb-two-${ha}`)
        const queue = uniqueName(`tsq-djb-two-${ha}`)
        const extra = ha === 'lease' ? ['--ha', 'lease', '--redis-url', REDIS_URL, '--lock-timeout', '3'] : []
        const beats = [await startTsqBeat(extra), await startTsqBeat(extra)]
        await create({ name, task: 'proj.add', interval: [1, 'seconds'], args: [5, 5], queue })
        await waitFor(async () => (await redis.llen(queue)) >= 6, {
          timeoutMs: 60_000,
          what: `6 sends of ${name}\n${beats.map((b) => b.logTail()).join('\n---\n')}`,
        })
        const whileBoth = beats.map((b) => b.sends(name))
        for (const beat of beats) await stop(beat)
        const sent = await redis.llen(queue)
        const row = await orm('row', name)
        await set(name, { enabled: false })
        await redis.del(queue)
        assert.equal(row.total_run_count, sent, 'each run counted once and sent once')
        assert.equal(beats[0]!.sends(name) + beats[1]!.sends(name), sent, 'no run sent by both beats')
        if (ha === 'lease') assert.ok(whileBoth.includes(0), `one leader sends, the other stands by: ${whileBoth.join(' and ')}`)
      })
    }
  })
}

/** last_run_at as the column holds it, read beside Django. */
async function rawLastRunAt(db: TestDatabase, name: string): Promise<string> {
  const sql = 'SELECT last_run_at FROM django_celery_beat_periodictask WHERE name = ?'
  if (db.kind === 'sqlite') {
    const Database = (await import('better-sqlite3')).default
    const conn = new Database(db.url.replace(/^sqlite:\/\/\//, ''), { readonly: true })
    try {
      return String((conn.prepare(sql).get(name) as { last_run_at: unknown }).last_run_at)
    } finally {
      conn.close()
    }
  }
  if (db.kind === 'mysql') {
    const mysql = await import('mysql2/promise')
    const conn = await mysql.createConnection({ host: '127.0.0.1', user: 'root', database: db.django.NAME, dateStrings: true })
    try {
      const [rows] = await conn.query(sql, [name])
      return String((rows as Array<{ last_run_at: unknown }>)[0]!.last_run_at)
    } finally {
      await conn.end()
    }
  }
  const pg = (await import('pg')).default
  const conn = new pg.Client({ connectionString: db.url })
  await conn.connect()
  try {
    const res = await conn.query(
      "SELECT pg_typeof(last_run_at)::text || ' ' || to_char(last_run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS v FROM django_celery_beat_periodictask WHERE name = $1",
      [name],
    )
    return String(res.rows[0].v)
  } finally {
    await conn.end()
  }
}

/** A datetime text with its digits replaced: the form, not the value. */
function shape(text: string): string {
  return text.replace(/\d/g, '9')
}
