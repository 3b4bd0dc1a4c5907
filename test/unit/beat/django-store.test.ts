// The django-celery-beat store (issue 31 item 3) on an SQLite file holding
// the tables django_celery_beat's migrations make (their DDL, as `migrate`
// wrote it on SQLite): how rows become entries, when they are due, and what a
// run writes, as django_celery_beat/schedulers.py's DatabaseScheduler does.
// The end-to-end test against Django's ORM and Python's scheduler is
// test/interop/django-beat-*.test.ts.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { DjangoStore, instantOf } from '../../../src/beat/django-store.js'
import { scheduleOf } from '../../../src/beat/entry.js'

const DDL = `
CREATE TABLE "django_celery_beat_intervalschedule" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "every" integer NOT NULL, "period" varchar(24) NOT NULL);
CREATE TABLE "django_celery_beat_periodictasks" ("ident" smallint NOT NULL PRIMARY KEY, "last_update" datetime NOT NULL);
CREATE TABLE "django_celery_beat_periodictask" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "name" varchar(200) NOT NULL UNIQUE, "task" varchar(200) NOT NULL, "args" text NOT NULL, "kwargs" text NOT NULL, "queue" varchar(200) NULL, "exchange" varchar(200) NULL, "routing_key" varchar(200) NULL, "expires" datetime NULL, "enabled" bool NOT NULL, "last_run_at" datetime NULL, "total_run_count" integer unsigned NOT NULL CHECK ("total_run_count" >= 0), "date_changed" datetime NOT NULL, "description" text NOT NULL, "crontab_id" integer NULL, "interval_id" integer NULL, "solar_id" integer NULL, "one_off" bool NOT NULL, "start_time" datetime NULL, "priority" integer unsigned NULL CHECK ("priority" >= 0), "headers" text NOT NULL, "clocked_id" integer NULL, "expire_seconds" integer unsigned NULL CHECK ("expire_seconds" >= 0));
CREATE TABLE "django_celery_beat_clockedschedule" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "clocked_time" datetime NOT NULL);
CREATE TABLE "django_celery_beat_solarschedule" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "latitude" decimal NOT NULL, "longitude" decimal NOT NULL, "event" varchar(24) NOT NULL);
CREATE TABLE "django_celery_beat_crontabschedule" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "minute" varchar(240) NOT NULL, "hour" varchar(96) NOT NULL, "day_of_week" varchar(64) NOT NULL, "day_of_month" varchar(124) NOT NULL, "month_of_year" varchar(64) NOT NULL, "timezone" varchar(63) NOT NULL);
`

const T0 = Date.UTC(2026, 10, 28, 1, 0, 0)
/** Django's text for a naive UTC DateTimeField on SQLite. */
const text = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '000')

describe("[--scheduler django] DjangoStore on django-celery-beat's tables (SQLite)", () => {
  let dir: string
  let db: Database.Database
  let store: DjangoStore
  const warnings: string[] = []
  const infos: string[] = []

  const task = (name: string, fields: Record<string, unknown>) => {
    const row = {
      name,
      task: 'proj.add',
      args: '[]',
      kwargs: '{}',
      enabled: 1,
      total_run_count: 0,
      date_changed: text(T0),
      description: '',
      one_off: 0,
      headers: '{}',
      ...fields,
    }
    const keys = Object.keys(row)
    db.prepare(`INSERT INTO django_celery_beat_periodictask (${keys.join(', ')}) VALUES (${keys.map(() => '?').join(', ')})`).run(
      ...Object.values(row),
    )
  }
  const interval = (every: number, period: string) =>
    Number(db.prepare('INSERT INTO django_celery_beat_intervalschedule (every, period) VALUES (?, ?)').run(every, period).lastInsertRowid)
  const row = (name: string) =>
    db.prepare('SELECT * FROM django_celery_beat_periodictask WHERE name = ?').get(name) as Record<string, unknown>
  /** What every save through the ORM does (PeriodicTasks.update_changed). */
  const bump = (at: number) =>
    db.prepare('INSERT OR REPLACE INTO django_celery_beat_periodictasks (ident, last_update) VALUES (1, ?)').run(text(at))
  const names = async (now: number) => (await store.due(now)).entries.map((e) => e.definition.name).sort()

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tsq-djbeat-'))
    const file = join(dir, 'django.sqlite')
    db = new Database(file)
    db.exec(DDL)
    store = await DjangoStore.open({ url: `sqlite:///${file}`, log: { info: (m) => infos.push(m), warning: (m) => warnings.push(m) } })
  })

  after(async () => {
    await store.close()
    db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  test('an interval row never run is first due one period after the beat first sees it (ModelEntry takes now)', async () => {
    task('every10', {
      interval_id: interval(10, 'seconds'),
      args: '[2, 3]',
      kwargs: '{"z": 1}',
      queue: 'q1',
      priority: 7,
      headers: '{"h": "v"}',
      expire_seconds: 30,
    })
    bump(T0)
    const first = await store.due(T0)
    assert.deepEqual(first.entries, [])
    assert.equal(first.nextDueAt, T0 + 10_000)
    const due = await store.due(T0 + 10_000)
    assert.equal(due.entries.length, 1)
    const e = due.entries[0]!
    assert.deepEqual(e.definition.args, [2, 3])
    assert.deepEqual(e.definition.kwargs, { z: 1 })
    assert.deepEqual(e.definition.options, { queue: 'q1', priority: 7, expires: 30, headers: { h: 'v' } })
    assert.deepEqual(e.meta, { lastRunAt: T0, totalRunCount: 0 })
  })

  test('a run writes last_run_at (naive UTC text, as Django on SQLite) and total_run_count + 1, once', async () => {
    const ran = T0 + 10_250
    assert.deepEqual(await store.reserveAll([{ name: 'every10', expectedCount: 0, ranAt: ran, nextDueAt: ran + 10_000 }]), ['ok'])
    const r = row('every10')
    assert.equal(r.total_run_count, 1)
    assert.equal(r.last_run_at, '2026-11-28 01:00:10.250000')
    assert.equal(instantOf(r.last_run_at), ran)
    // A second beat that read the same count loses the compare-and-set.
    assert.deepEqual(await store.reserveAll([{ name: 'every10', expectedCount: 0, ranAt: ran, nextDueAt: ran + 10_000 }]), ['stale'])
    assert.deepEqual(await names(ran + 5000), [])
    assert.deepEqual(await names(ran + 10_000), ['every10'])
  })

  test('a change is taken up when the marker row moves, as DatabaseScheduler.schedule_changed', async () => {
    db.prepare('UPDATE django_celery_beat_periodictask SET enabled = 0, last_run_at = NULL WHERE name = ?').run('every10')
    // Without the marker the cache stands, but the due row is read afresh before it is offered.
    assert.deepEqual(await names(T0 + 30_000), [])
    task('hourly', { interval_id: interval(1, 'hours'), last_run_at: text(T0 - 3_600_000) })
    assert.deepEqual(await names(T0 + 30_000), [], 'not seen before the marker moves')
    bump(T0 + 30_000)
    assert.deepEqual(await names(T0 + 30_000), ['hourly'])
    assert.ok(infos.includes('DatabaseScheduler: Schedule changed.'))
    assert.deepEqual(await store.reserveAll([{ name: 'every10', expectedCount: 1, ranAt: T0, nextDueAt: T0 }]), ['gone'])
  })

  test('one_off: after its run the row is disabled, its count reset and last_run_at cleared, and the marker moves', async () => {
    task('once', { interval_id: interval(1, 'seconds'), one_off: 1, last_run_at: text(T0) })
    bump(T0 + 40_000)
    assert.deepEqual(await names(T0 + 40_000), ['hourly', 'once'])
    assert.deepEqual(await store.reserveAll([{ name: 'once', expectedCount: 0, ranAt: T0 + 40_000, nextDueAt: T0 + 41_000 }]), ['ok'])
    assert.deepEqual(await names(T0 + 45_000), ['hourly'])
    const r = row('once')
    assert.deepEqual([r.enabled, r.total_run_count, r.last_run_at], [0, 0, null])
    const marker = db.prepare('SELECT last_update FROM django_celery_beat_periodictasks').get() as { last_update: string }
    assert.equal(instantOf(marker.last_update), T0 + 45_000)
  })

  test('start_time holds a row back until then; clocked runs once at its instant', async () => {
    task('later', { interval_id: interval(1, 'seconds'), start_time: text(T0 + 120_000), last_run_at: text(T0) })
    const clockedId = Number(
      db.prepare('INSERT INTO django_celery_beat_clockedschedule (clocked_time) VALUES (?)').run(text(T0 + 90_000)).lastInsertRowid,
    )
    task('clock', { clocked_id: clockedId, one_off: 1 })
    bump(T0 + 60_000)
    db.prepare('UPDATE django_celery_beat_periodictask SET enabled = 0 WHERE name = ?').run('hourly')
    const batch = await store.due(T0 + 60_000)
    assert.deepEqual(
      batch.entries.map((e) => e.definition.name),
      [],
    )
    assert.equal(batch.nextDueAt, T0 + 90_000)
    assert.deepEqual(await names(T0 + 90_000), ['clock'])
    assert.deepEqual(await names(T0 + 120_000), ['clock', 'later'])
    const clocked = (await store.get('clock'))!
    assert.deepEqual(clocked.definition.schedule, { __type__: 'clocked', clocked_time: new Date(T0 + 90_000).toISOString() })
  })

  test('a crontab row is read in its own timezone column', async () => {
    const id = Number(
      db
        .prepare(
          'INSERT INTO django_celery_beat_crontabschedule (minute, hour, day_of_week, day_of_month, month_of_year, timezone) VALUES (?, ?, ?, ?, ?, ?)',
        )
        .run('30', '9', '*', '*', '*', 'Asia/Kolkata').lastInsertRowid,
    )
    task('kolkata', { crontab_id: id, last_run_at: text(T0) })
    const e = (await store.get('kolkata'))!
    // 09:30 in Kolkata (+05:30) is 04:00 UTC, whatever beat's own zone.
    assert.equal(scheduleOf(e.definition.schedule, 'Europe/Berlin').dueAt(T0), Date.UTC(2026, 10, 28, 4, 0, 0))
  })

  test('a solar row runs at its sun event, the one Celery computes', async () => {
    const id = Number(
      db.prepare('INSERT INTO django_celery_beat_solarschedule (latitude, longitude, event) VALUES (?, ?, ?)').run(52.5, 13.4, 'sunrise')
        .lastInsertRowid,
    )
    task('sunny', { solar_id: id, last_run_at: text(T0) })
    bump(T0 + 100_000)
    const e = (await store.get('sunny'))!
    assert.deepEqual(e.definition.schedule, { __type__: 'solar', event: 'sunrise', lat: 52.5, lon: 13.4 })
    const at = scheduleOf(e.definition.schedule, 'UTC').dueAt(T0)
    // Celery 5.2.6 with PyEphem: solar('sunrise', 52.5, 13.4).remaining_estimate(T0) ends at
    // 06:49:44 UTC; suncalc's ephemeris differs by well under 2 minutes (test/interop/solar-schedule.test.ts).
    assert.ok(Math.abs(at - Date.parse('2026-11-28T06:49:44Z')) < 120_000, new Date(at).toISOString())
    const before = await store.due(at - 1000)
    assert.ok(!before.entries.some((x) => x.definition.name === 'sunny'))
    assert.ok(before.nextDueAt !== null && before.nextDueAt <= at)
    assert.ok((await names(at)).includes('sunny'))
    assert.deepEqual(await store.reserveAll([{ name: 'sunny', expectedCount: 0, ranAt: at + 200, nextDueAt: at + 86_400_000 }]), ['ok'])
    // The next is the following morning's.
    const next = scheduleOf(e.definition.schedule, 'UTC').dueAt(at + 200)
    assert.ok(next - at > 23.9 * 3600_000 && next - at < 24.1 * 3600_000, new Date(next).toISOString())
    db.prepare('UPDATE django_celery_beat_periodictask SET enabled = 0 WHERE name = ?').run('sunny')
  })

  test('a solar row in polar night waits for the next sunrise with one line; a bad event or bad JSON is skipped with one line naming it, once', async () => {
    const solar = (lat: number, lon: number, event: string) =>
      Number(
        db.prepare('INSERT INTO django_celery_beat_solarschedule (latitude, longitude, event) VALUES (?, ?, ?)').run(lat, lon, event)
          .lastInsertRowid,
      )
    task('tromso', { solar_id: solar(69.6, 18.9, 'sunrise'), last_run_at: text(T0) })
    task('moony', { solar_id: solar(52.5, 13.4, 'moonrise'), last_run_at: text(T0) })
    task('badargs', { interval_id: interval(2, 'seconds'), args: '[1,', last_run_at: text(T0) })
    bump(T0 + 200_000)
    await names(T0 + 200_000)
    await names(T0 + 201_000)
    for (const name of ['tromso', 'moony', 'badargs'])
      assert.equal(warnings.filter((w) => w.includes(`"${name}"`)).length, 1, warnings.join('\n'))
    // Polar night in Tromso from late November to mid January.
    const polar = warnings.find((w) => w.includes('"tromso"'))!
    assert.match(
      polar,
      /sunrise does not occur at 69\.6, 18\.9 for \d+ day\(s\) after 2026-11-28T01:00:00\.000Z \(polar day or night\); next run at 2027-01-1\d/,
    )
    assert.match(
      warnings.find((w) => w.includes('"moony"'))!,
      /Argument event "moonrise" is invalid/,
    )
    assert.match(
      warnings.find((w) => w.includes('"badargs"'))!,
      /args is not JSON/,
    )
  })

  test("tsq schedule cannot edit it: the rows are the Django project's", async () => {
    await assert.rejects(store.remove(), /change them in the Django admin or through the ORM/)
  })
})
