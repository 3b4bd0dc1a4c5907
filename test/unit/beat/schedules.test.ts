import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Crontab } from '../../../src/beat/crontab.js'
import { Interval } from '../../../src/beat/interval.js'
import {
  decodeDefinition,
  decodeMeta,
  definitionFromConfig,
  encodeDefinition,
  encodeMeta,
  intervalJson,
  scheduleOf,
} from '../../../src/beat/entry.js'
import { definitionFromFlags } from '../../../src/beat/admin.js'
import { FileStore } from '../../../src/beat/file-store.js'

const at = (iso: string) => Date.parse(iso)

test('spec §8.4: crontab_parser ranges, steps, names, wrap-around', () => {
  const c = new Crontab({ minute: '*/15', hour: '9-17/4', day_of_week: 'fri-mon', day_of_month: '1,15-16', month_of_year: '*' })
  assert.deepEqual(c.minutes, [0, 15, 30, 45])
  assert.deepEqual(c.hours, [9, 13, 17])
  assert.deepEqual([...c.daysOfWeek].sort(), [0, 1, 5, 6])
  assert.deepEqual(
    [...c.daysOfMonth].sort((a, b) => a - b),
    [1, 15, 16],
  )
  assert.deepEqual(
    [...new Crontab({ minute: '0', hour: '0', day_of_week: 'Sunday', day_of_month: '*', month_of_year: '*' }).daysOfWeek],
    [0],
  )
  for (const bad of ['-1', '60', '1,,2', '*/0', 'x-y', '5-']) {
    assert.throws(
      () => new Crontab({ minute: bad, hour: '*', day_of_week: '*', day_of_month: '*', month_of_year: '*' }),
      /invalid crontab minute/,
      bad,
    )
  }
  assert.throws(() => Crontab.fromExpression('* * *'), /5 fields/)
})

test('spec §8.4: day of week AND day of month (Friday the 13th)', () => {
  const c = Crontab.fromExpression('0 12 13 * fri')
  assert.equal(new Date(c.nextAfter(at('2025-01-01T00:00:00Z'))).toISOString(), '2025-06-13T12:00:00.000Z')
})

test('DST: a spring-forward gap runs once at the first valid time; a fall-back hour runs each time once', () => {
  const spring = Crontab.fromExpression('*/20 2 * * *', 'Europe/Berlin')
  const first = spring.nextAfter(at('2024-03-30T23:50:00Z'))
  assert.equal(new Date(first).toISOString(), '2024-03-31T01:00:00.000Z') // 03:00 CEST
  assert.equal(new Date(spring.nextAfter(first)).toISOString(), '2024-04-01T00:00:00.000Z') // 02:00 CEST next day
  const fall = Crontab.fromExpression('30 2 * * *', 'Europe/Berlin')
  const once = fall.nextAfter(at('2024-10-26T22:00:00Z'))
  assert.equal(new Date(once).toISOString(), '2024-10-27T00:30:00.000Z') // 02:30 CEST, the first showing
  assert.equal(new Date(fall.nextAfter(once)).toISOString(), '2024-10-28T01:30:00.000Z') // not 02:30 CET the same night
})

test('spec §8.3: interval is_due and relative rounding', () => {
  const i = new Interval(10)
  assert.deepEqual(i.isDue(1000, 5000), { due: false, next: 6 })
  assert.deepEqual(i.isDue(1000, 11_000), { due: true, next: 10 })
  const r = new Interval(3600, true)
  assert.equal(new Date(r.dueAt(at('2025-01-01T10:20:30Z'))).toISOString(), '2025-01-01T11:00:00.000Z')
})

test('spec §8.6: RedBeat JSON round trip, key order', () => {
  const d = definitionFromConfig('e', { task: 'proj.add', schedule: 30, args: [1, 2] })
  assert.equal(
    encodeDefinition(d),
    '{"name":"e","task":"proj.add","args":[1,2],"kwargs":{},"options":{},"schedule":{"__type__":"interval","every":30,"relative":false},"enabled":true}',
  )
  assert.deepEqual(decodeDefinition(encodeDefinition(d)), d)
  const cron = definitionFromConfig('c', { task: 't', schedule: { cron: '*/15 9-17 * * *' } })
  assert.deepEqual(Object.keys(cron.schedule), ['__type__', 'minute', 'hour', 'day_of_week', 'day_of_month', 'month_of_year'])
  const meta = { lastRunAt: at('2025-02-03T04:05:06.789Z'), totalRunCount: 7 }
  assert.deepEqual(decodeMeta(encodeMeta(meta)), meta)
  // As RedBeat writes it from Python: a zone name, and microseconds.
  const py =
    '{"last_run_at": {"__type__": "datetime", "year": 2025, "month": 7, "day": 1, "hour": 14, "minute": 0, "second": 0, "microsecond": 250000, "timezone": "Europe/Berlin"}, "total_run_count": 3}'
  assert.deepEqual(decodeMeta(py), { lastRunAt: at('2025-07-01T12:00:00.250Z'), totalRunCount: 3 })
})

test('[--scheduler file] run history survives a restart; reservation is compare-and-set', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-beat-'))
  try {
    const path = join(dir, 's.json')
    const a = new FileStore(path)
    await a.save({ name: 'e', task: 't', args: [], kwargs: {}, options: {}, schedule: intervalJson(5), enabled: true }, { now: 1000 })
    assert.equal(await a.reserve({ name: 'e', expectedCount: 0, ranAt: 7000, nextDueAt: 12_000 }), 'ok')
    assert.equal(await a.reserve({ name: 'e', expectedCount: 0, ranAt: 7000, nextDueAt: 12_000 }), 'stale')
    const b = new FileStore(path)
    const e = await b.get('e')
    assert.deepEqual(e?.meta, { lastRunAt: 7000, totalRunCount: 1 })
    assert.deepEqual((await b.due(11_000)).entries, [])
    assert.equal((await b.due(12_000)).entries.length, 1)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test("solar in tsq's own entries: --solar EVENT:LAT,LON and beatSchedule {solar}, stored as RedBeat's solar JSON", () => {
  const json = { __type__: 'solar', event: 'sunrise', lat: 51.5, lon: -0.12 }
  const flagged = definitionFromFlags('lights', { task: 'home.lights', solar: 'sunrise:51.5,-0.12' })
  assert.deepEqual(flagged.schedule, json)
  // RedBeat's encoder writes {__type__, event, lat, lon}; decoded back unchanged.
  assert.deepEqual(decodeDefinition(encodeDefinition(flagged)).schedule, json)
  assert.deepEqual(definitionFromConfig('l', { task: 't', schedule: { solar: 'sunrise:51.5,-0.12' } }).schedule, json)
  assert.deepEqual(definitionFromConfig('l', { task: 't', schedule: json }).schedule, json)
  const s = scheduleOf(flagged.schedule, 'UTC')
  assert.equal(String(s), '<solar: sunrise at latitude 51.5, longitude: -0.12>')
  // London, 28 Nov 2026: sunrise about 07:39 UTC (PyEphem says 07:39:20).
  assert.ok(Math.abs(s.dueAt(at('2026-11-28T02:00:00Z')) - at('2026-11-28T07:39:20Z')) < 120_000)
  assert.throws(() => definitionFromFlags('x', { task: 't', solar: 'sunrise' }), /solar schedule must be EVENT:LAT,LON/)
  assert.throws(() => definitionFromFlags('x', { task: 't', solar: 'noon:1,2' }), /Argument event "noon" is invalid/)
  assert.throws(() => definitionFromFlags('x', { task: 't', solar: 'sunrise:95,2' }), /latitude 95 is invalid/)
  assert.throws(() => definitionFromFlags('x', { task: 't', every: '5', solar: 'sunrise:1,2' }), /give one of --every, --cron or --solar/)
})
