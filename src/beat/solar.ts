// Celery's `solar(event, lat, lon)` (celery/schedules.py, 5.2.6): due at the
// next occurrence of a sun event after the last run. Celery asks PyEphem;
// tsq asks suncalc, with Celery's horizons: sunrise and sunset are the upper
// limb at -0:34 (suncalc's -0.833 for the centre is that plus the sun's
// radius), the twilights are the centre at -6, -12 and -18 with no
// refraction (Celery sets pressure 0), solar noon is the transit.
import SunCalc from 'suncalc'

export type SolarEvent =
  | 'dawn_astronomical'
  | 'dawn_nautical'
  | 'dawn_civil'
  | 'sunrise'
  | 'solar_noon'
  | 'sunset'
  | 'dusk_civil'
  | 'dusk_nautical'
  | 'dusk_astronomical'

// Celery 5.2.6's horizon for dusk_astronomical is '18', not '-18' (a typo in
// its table): Python runs that event when the sun sinks through 18 degrees
// above the horizon, in the afternoon. tsq keeps Python's time so the two
// beats agree on a row; suncalc has no such angle, so it is added.
SunCalc.addTime(18, 'celeryAbove18Rise', 'celeryAbove18Set')

/** suncalc's name for each of Celery's events. */
const SUNCALC: Record<SolarEvent, string> = {
  dawn_astronomical: 'nightEnd',
  dawn_nautical: 'nauticalDawn',
  dawn_civil: 'dawn',
  sunrise: 'sunrise',
  solar_noon: 'solarNoon',
  sunset: 'sunset',
  dusk_civil: 'dusk',
  dusk_nautical: 'nauticalDusk',
  dusk_astronomical: 'celeryAbove18Set',
}

export const SOLAR_EVENTS = Object.keys(SUNCALC).sort() as SolarEvent[]

const DAY = 86_400_000
/**
 * How far ahead the next occurrence is looked for. At the poles an event can
 * be absent for months; after a year of none it never comes (a latitude the
 * sun never reaches that angle at), and the row is looked at again a day on.
 */
const SEARCH_DAYS = 370
/**
 * suncalc and PyEphem disagree by up to a minute or so (different
 * ephemerides). When Python's beat ran an event a little before tsq's own
 * time for it, tsq would see that occurrence as still to come and run it a
 * second time; an occurrence this close after the last run is taken to be the
 * one that run was for. Events of one kind are about a day apart.
 */
/** The altitude (degrees) Celery's horizon puts the sun's centre at, per event; null for the transit. */
const ANGLE: Record<SolarEvent, number | null> = {
  dawn_astronomical: -18,
  dawn_nautical: -12,
  dawn_civil: -6,
  sunrise: -0.833,
  solar_noon: null,
  sunset: -0.833,
  dusk_civil: -6,
  dusk_nautical: -12,
  dusk_astronomical: 18,
}

/**
 * suncalc's getTimes uses the short sunrise equation (a minute or two off
 * PyEphem); its getPosition is closer. The estimate is refined by bisection
 * on the position: altitude through the event's angle, or for the transit,
 * the azimuth through the meridian (sin(azimuth) goes from - to + at noon
 * in suncalc's south-based azimuth, in both hemispheres).
 */
function refine(estimate: number, lat: number, lon: number, angle: number | null): number {
  const f = (ms: number) => {
    const p = SunCalc.getPosition(new Date(ms), lat, lon)
    return angle === null ? Math.sin(p.azimuth) : (p.altitude * 180) / Math.PI - angle
  }
  let a = estimate - 20 * 60_000
  let b = estimate + 20 * 60_000
  const fa = f(a)
  if (Math.sign(fa) === Math.sign(f(b))) return estimate
  while (b - a > 500) {
    const m = (a + b) / 2
    if (Math.sign(f(m)) === Math.sign(fa)) a = m
    else b = m
  }
  return Math.round((a + b) / 2)
}

const SAME_OCCURRENCE_MS = 5 * 60_000

export class Solar {
  readonly event: SolarEvent

  constructor(
    event: string,
    readonly lat: number,
    readonly lon: number,
  ) {
    // Celery's messages (SOLAR_INVALID_EVENT / _LATITUDE / _LONGITUDE).
    if (!(event in SUNCALC)) throw new RangeError(`Argument event "${event}" is invalid. It must be one of ${SOLAR_EVENTS.join(', ')}.`)
    if (!Number.isFinite(lat) || lat < -90 || lat > 90)
      throw new RangeError(`Argument latitude ${lat} is invalid, must be between -90 and 90.`)
    if (!Number.isFinite(lon) || lon < -180 || lon > 180)
      throw new RangeError(`Argument longitude ${lon} is invalid, must be between -180 and 180.`)
    this.event = event as SolarEvent
  }

  toString(): string {
    return `<solar: ${this.event} at latitude ${this.lat}, longitude: ${this.lon}>`
  }

  /** The event's occurrences in suncalc's solar day around `ms` (none where the sun does not reach the angle). */
  private occurrenceNear(ms: number): number | null {
    const t = (SunCalc.getTimes(new Date(ms), this.lat, this.lon) as unknown as Record<string, Date>)[SUNCALC[this.event]]
    const at = t?.getTime()
    return at !== undefined && Number.isFinite(at) ? refine(at, this.lat, this.lon, ANGLE[this.event]) : null
  }

  /**
   * The first occurrence after `after`, and how many solar days had none on
   * the way (polar day or night). Celery 5.2.6 asks PyEphem for the next
   * rising or setting only within one day; on a day without one PyEphem
   * raises and Celery's fallback fails (TypeError adding a timedelta to an
   * ephem.Date), so Python's beat stops on such a row. tsq goes on to the
   * next day the event happens, which is what that fallback meant to do.
   */
  next(after: number): { at: number; daysWithout: number } {
    let daysWithout = 0
    // suncalc answers per solar day around the date given: walk day by day
    // from the day before, so the day holding `after` is never missed.
    for (let d = -1; d <= SEARCH_DAYS; d++) {
      const at = this.occurrenceNear(after + d * DAY)
      if (at === null) {
        if (d >= 0) daysWithout++
        continue
      }
      if (at > after + SAME_OCCURRENCE_MS) return { at, daysWithout }
    }
    return { at: after + DAY, daysWithout }
  }

  dueAt(lastRunAt: number): number {
    return this.next(lastRunAt).at
  }

  isDue(lastRunAt: number, now: number): { due: boolean; next: number } {
    const rem = (this.dueAt(lastRunAt) - now) / 1000
    // Celery: when due, the next check is the event after now.
    if (rem <= 0) return { due: true, next: Math.max((this.dueAt(now) - now) / 1000, 0) }
    return { due: false, next: rem }
  }
}
