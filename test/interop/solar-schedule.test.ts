// tsq's solar schedule (src/beat/solar.ts, on suncalc) against Celery 5.2.6's
// celery.schedules.solar (on PyEphem): for several places and all nine
// events, the next run after a fixed last_run_at. The two use different
// ephemeris algorithms (suncalc's short series, PyEphem's VSOP87), so their
// times differ by up to a minute or so; 2 minutes is the tolerance. No
// clock of this machine is involved: both sides get the same instants.
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { resolve } from 'node:path'
import { Solar, SOLAR_EVENTS } from '../../src/beat/solar.js'
import { PYTHON, REPO_ROOT, run } from './helpers/python-worker.js'

const ephemSkip =
  (await run(PYTHON, ['-c', 'import ephem, celery'])).code === 0
    ? false
    : process.env.CI
      ? (() => {
          throw new Error('CI requires python3-ephem and python3-celery')
        })()
      : 'python3-ephem not installed'

const TOLERANCE_MS = 2 * 60_000

/** [lat, lon, last_run_at]: equator, London in winter, Oslo in early summer (no nautical or astronomical night), Sydney in both seasons. */
const PLACES: [number, number, string][] = [
  [0, 0, '2026-03-10T06:30:00Z'],
  [51.5, -0.12, '2026-11-28T02:00:00Z'],
  [59.9, 10.7, '2026-06-10T09:00:00Z'],
  [-33.9, 151.2, '2026-01-15T12:00:00Z'],
  [-33.9, 151.2, '2026-07-15T03:00:00Z'],
  // Tromso at midsummer: the sun does not set, so no sunrise, sunset, dawn or dusk for weeks.
  [69.6, 18.9, '2026-06-21T00:00:00Z'],
]

async function python(cases: unknown[][]): Promise<({ at: string } | { error: string })[]> {
  const r = await run(PYTHON, [resolve(REPO_ROOT, 'test/interop/py/solar_next.py'), JSON.stringify(cases)])
  assert.equal(r.code, 0, r.stderr)
  return JSON.parse(r.stdout) as ({ at: string } | { error: string })[]
}

describe('[beat] solar schedule: tsq (suncalc) vs Celery 5.2.6 (PyEphem)', { skip: ephemSkip }, () => {
  test("the next run of each of the nine events at each place is Python's, within 2 minutes", async () => {
    const cases = PLACES.flatMap(([lat, lon, last]) => SOLAR_EVENTS.map((event) => [event, lat, lon, last]))
    const answers = await python(cases)
    let compared = 0
    let polar = 0
    cases.forEach(([event, lat, lon, last], i) => {
      const label = `${event} at ${lat},${lon} after ${last}`
      const mine = new Solar(event as string, lat as number, lon as number).next(Date.parse(last as string))
      const py = answers[i]!
      if ('at' in py) {
        assert.equal(mine.daysWithout, 0, label)
        const diff = Math.abs(mine.at - Date.parse(py.at))
        assert.ok(diff <= TOLERANCE_MS, `${label}: tsq ${new Date(mine.at).toISOString()} vs Python ${py.at} (${diff / 1000} s apart)`)
        compared++
      } else {
        // A day without the event: PyEphem raises AlwaysUpError/NeverUpError and
        // Celery 5.2.6's fallback (next anti-transit + 1 minute) fails on
        // ephem.Date + timedelta, so Python's beat cannot go on with the row.
        // tsq takes the next day the event does happen, at least a day on.
        assert.match(py.error, /TypeError: unsupported operand type\(s\) for \+: 'ephem\.Date' and 'datetime\.timedelta'/, label)
        assert.ok(mine.daysWithout > 0, `${label}: Python found no occurrence that day, tsq did (${new Date(mine.at).toISOString()})`)
        assert.ok(mine.at > Date.parse(last as string) + 86_400_000, label)
        polar++
      }
    })
    // Days without the event: Tromso's seven (midnight sun), Oslo's three (no
    // nautical night in June), London's dusk_astronomical (Celery's +18
    // degrees: the winter sun never climbs that high).
    assert.deepEqual({ compared, polar }, { compared: 43, polar: 11 })
  })

  test('after a polar gap the event is back, and agrees with Python again', async () => {
    const s = new Solar('sunrise', 69.6, 18.9)
    const { at } = s.next(Date.parse('2026-06-21T00:00:00Z'))
    // The first sunrise after the midnight sun, asked of Python from an hour before it.
    const [py] = await python([['sunrise', 69.6, 18.9, new Date(at - 3_600_000).toISOString()]])
    assert.ok(py && 'at' in py, JSON.stringify(py))
    assert.ok(Math.abs(at - Date.parse(py.at)) <= TOLERANCE_MS, `tsq ${new Date(at).toISOString()} vs Python ${py.at}`)
  })

  test('is_due: due at the event, then the next check is the event after now; bad input as Celery words it', () => {
    const s = new Solar('solar_noon', 51.5, -0.12)
    const last = Date.parse('2026-11-28T02:00:00Z')
    const noon = s.dueAt(last)
    assert.deepEqual(s.isDue(last, noon - 60_000), { due: false, next: 60 })
    const due = s.isDue(last, noon + 1000)
    assert.equal(due.due, true)
    assert.ok(due.next > 23 * 3600 && due.next < 25 * 3600, String(due.next))
    assert.throws(() => new Solar('moonrise', 0, 0), /Argument event "moonrise" is invalid/)
    assert.throws(() => new Solar('sunrise', 91, 0), /latitude 91 is invalid/)
    assert.throws(() => new Solar('sunrise', 0, -181), /longitude -181 is invalid/)
  })
})
