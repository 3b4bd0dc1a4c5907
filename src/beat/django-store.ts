// django-celery-beat's tables as a beat store (`tsq beat --scheduler django`),
// read and written as its DatabaseScheduler (django_celery_beat/schedulers.py)
// does: the enabled rows of django_celery_beat_periodictask with their
// interval, crontab, solar and clocked rows; a re-read only when the change
// marker django_celery_beat_periodictasks.last_update (ident 1) moves, as the
// Django admin and ORM bump it on every save; last_run_at and
// total_run_count written at each run. Unlike Python, which keeps runs in
// memory and writes them every three minutes, each run is written before its
// send as a compare-and-set on total_run_count, so several beats on one
// database never send a run twice, lease or not.
//
// Datetimes follow Django with USE_TZ = True: PostgreSQL's timestamptz holds
// instants; MySQL's and SQLite's naive columns hold UTC.
import { checkJsonText, codedError, isoformatUtc, TsqError } from '../protocol/index.js'
import { isMissingTable, openSqlClient, type Row, type SqlClient } from '../backends/index.js'
import { MAX_ENTRY_CHARS, scheduleOf, type Entry, type EntryDefinition, type EntryOptions, type ScheduleJson } from './entry.js'
import { Solar } from './solar.js'
import type { BeatStore, DueBatch, Fence, ReleaseRun, ReserveOutcome, ReserveRequest, ReserveRun } from './store.js'

const TASKS = 'django_celery_beat_periodictask'
const CHANGES = 'django_celery_beat_periodictasks'

/** IntervalSchedule.period, in seconds. */
const PERIOD_S: Record<string, number> = { days: 86_400, hours: 3600, minutes: 60, seconds: 1, microseconds: 1e-6 }

const SELECT = `SELECT t.name, t.task, t.args, t.kwargs, t.queue, t.exchange, t.routing_key, t.headers, t.priority,
 t.expires, t.expire_seconds, t.one_off, t.start_time, t.enabled, t.last_run_at, t.total_run_count,
 t.interval_id, t.crontab_id, t.solar_id, t.clocked_id,
 i.every AS i_every, i.period AS i_period,
 c.minute AS c_minute, c.hour AS c_hour, c.day_of_week AS c_dow, c.day_of_month AS c_dom, c.month_of_year AS c_moy, c.timezone AS c_tz,
 s.event AS s_event, s.latitude AS s_lat, s.longitude AS s_lon,
 k.clocked_time AS k_time
FROM ${TASKS} t
LEFT JOIN django_celery_beat_intervalschedule i ON i.id = t.interval_id
LEFT JOIN django_celery_beat_crontabschedule c ON c.id = t.crontab_id
LEFT JOIN django_celery_beat_solarschedule s ON s.id = t.solar_id
LEFT JOIN django_celery_beat_clockedschedule k ON k.id = t.clocked_id`

export class DjangoStoreError extends codedError('USAGE') {}

/** One PeriodicTask row as the scheduler needs it. */
interface TaskRow {
  entry: Entry
  oneOff: boolean
  startTime: number | null
  clocked: boolean
  /** Why the row cannot run (bad JSON, no schedule, a bad solar event or place): logged once, skipped. */
  problem: string | null
}

/** A DateTimeField's value as an instant: naive text is UTC (USE_TZ = True). */
export function instantOf(value: unknown): number | null {
  if (value === null || value === undefined || value === '') return null
  if (value instanceof Date) return value.getTime()
  const text = String(value).trim().replace(' ', 'T')
  const ms = Date.parse(/(Z|[+-]\d\d(:?\d\d)?)$/i.test(text) ? text : `${text}Z`)
  return Number.isFinite(ms) ? ms : null
}

function truthy(value: unknown): boolean {
  return value === true || value === 1 || value === '1' || value === 't' || value === 'true'
}

function jsonField<T>(text: unknown, fallback: string, what: string): T {
  const raw = text === null || text === undefined || text === '' ? fallback : Buffer.isBuffer(text) ? text.toString('utf8') : String(text)
  try {
    checkJsonText(raw, what, MAX_ENTRY_CHARS)
    return JSON.parse(raw) as T
  } catch (error) {
    throw new DjangoStoreError(`${what} is not JSON (${(error as Error).message})`)
  }
}

function scheduleOfRow(r: Row): { schedule: ScheduleJson; clocked: boolean } {
  // PeriodicTask.schedule's order: interval, crontab, solar, clocked.
  if (r.interval_id !== null && r.interval_id !== undefined) {
    const per = PERIOD_S[String(r.i_period)]
    if (r.i_every === null || r.i_every === undefined) throw new DjangoStoreError(`its interval schedule ${r.interval_id} was removed`)
    if (per === undefined) throw new DjangoStoreError(`unknown interval period ${JSON.stringify(r.i_period)}`)
    return { schedule: { __type__: 'interval', every: Number(r.i_every) * per, relative: false }, clocked: false }
  }
  if (r.crontab_id !== null && r.crontab_id !== undefined) {
    if (r.c_minute === null || r.c_minute === undefined) throw new DjangoStoreError(`its crontab schedule ${r.crontab_id} was removed`)
    const f = (v: unknown) => String(v ?? '').replace(/\s+/g, '') || '*'
    return {
      schedule: {
        __type__: 'crontab',
        minute: f(r.c_minute),
        hour: f(r.c_hour),
        day_of_week: f(r.c_dow),
        day_of_month: f(r.c_dom),
        month_of_year: f(r.c_moy),
        timezone: String(r.c_tz || 'UTC'),
      },
      clocked: false,
    }
  }
  if (r.solar_id !== null && r.solar_id !== undefined) {
    if (r.s_event === null || r.s_event === undefined) throw new DjangoStoreError(`its solar schedule ${r.solar_id} was removed`)
    return { schedule: { __type__: 'solar', event: String(r.s_event), lat: Number(r.s_lat), lon: Number(r.s_lon) }, clocked: false }
  }
  if (r.clocked_id !== null && r.clocked_id !== undefined) {
    const at = instantOf(r.k_time)
    if (at === null) throw new DjangoStoreError(`its clocked schedule ${r.clocked_id} was removed`)
    return { schedule: { __type__: 'clocked', clocked_time: new Date(at).toISOString() }, clocked: true }
  }
  throw new DjangoStoreError('it has no schedule (one of interval, crontab, solar or clocked must be set)')
}

/** ModelEntry's options: queue, exchange, routing_key, priority when set; expires (a date, or expire_seconds); headers. */
function optionsOfRow(r: Row): EntryOptions {
  const options: EntryOptions = {}
  for (const key of ['queue', 'exchange', 'routing_key'] as const)
    if (r[key] !== null && r[key] !== undefined && r[key] !== '') options[key] = String(r[key])
  if (r.priority !== null && r.priority !== undefined) options.priority = Number(r.priority)
  const expires = instantOf(r.expires)
  if (expires !== null) options.expires = isoformatUtc(new Date(expires))
  else if (r.expire_seconds !== null && r.expire_seconds !== undefined && Number(r.expire_seconds) > 0)
    options.expires = Number(r.expire_seconds)
  options.headers = jsonField<Record<string, unknown>>(r.headers, '{}', 'headers')
  return options
}

export interface DjangoStoreOptions {
  /** The Django project's database, as an SQLAlchemy-style URL. */
  url: string
  tz?: string
  /** Where a row tsq cannot run is reported (once per row), and a reload after a change. */
  log?: StoreLog
}

export interface StoreLog {
  info(message: string): void
  warning(message: string): void
}

export class DjangoStore implements BeatStore {
  readonly kind = 'django' as const
  readonly location: string
  /** The lease key for `--ha lease`: names the database, so beats on one database share it. */
  readonly leaseKey: string
  private marker: string | undefined
  private rows = new Map<string, TaskRow>()
  /** When this beat first saw a row with no last_run_at: Python's ModelEntry takes "now" for it. */
  private readonly firstSeen = new Map<string, number>()
  /** For a reserved run whose row had no last_run_at: the instant assumed, so a release puts NULL back. */
  private readonly assumed = new Map<string, number>()
  private readonly reported = new Set<string>()
  /** Per solar row, the run a polar gap was last reported for: one line per gap, not per tick. */
  private readonly solarGaps = new Map<string, number>()
  private fenceCheck: ((fence: Fence) => Promise<boolean>) | undefined
  private readonly tz: string
  private readonly log: StoreLog
  private readonly TRUE: string
  private readonly FALSE: string

  private constructor(
    private readonly client: SqlClient,
    options: DjangoStoreOptions,
  ) {
    this.tz = options.tz ?? 'UTC'
    this.log = options.log ?? { info: () => undefined, warning: () => undefined }
    this.location = `django-celery-beat at ${client.displayUrl}`
    this.TRUE = client.dialect === 'postgresql' ? 'TRUE' : '1'
    this.FALSE = client.dialect === 'postgresql' ? 'FALSE' : '0'
    let identity = client.displayUrl
    try {
      const u = new URL(options.url)
      identity = u.protocol === 'sqlite:' ? options.url : `${u.hostname}:${u.port || 'default'}${u.pathname}`
    } catch {
      // An SQLite path or other non-URL: the masked form is identity enough.
    }
    this.leaseKey = `tsq:django-beat:${identity}:lock`
  }

  static async open(options: DjangoStoreOptions): Promise<DjangoStore> {
    const client = await openSqlClient(options.url)
    try {
      await client.query(`SELECT 1 FROM ${TASKS} WHERE 1 = 0`)
    } catch (error) {
      await client.close().catch(() => undefined)
      const missing = isMissingTable(error)
      throw new TsqError(
        'BROKER_UNREACHABLE',
        `cannot use the django-celery-beat schedule at ${client.displayUrl}: ${missing ? `${TASKS} is missing (add django_celery_beat to INSTALLED_APPS and run the Django project's \`manage.py migrate\`)` : (error as Error).message}`,
      )
    }
    return new DjangoStore(client, options)
  }

  /** `--ha lease`: a reservation first checks that this token still holds the lease. */
  useFence(check: (fence: Fence) => Promise<boolean>): void {
    this.fenceCheck = check
  }

  private nowText(ms: number): string {
    // DateTimeField as Django writes it: timestamptz on PostgreSQL, naive UTC text elsewhere.
    const iso = isoformatUtc(new Date(ms), '')
    const full = iso.includes('.') ? iso : `${iso}.000000`
    return this.client.dialect === 'postgresql' ? `${full}+00:00` : full.replace('T', ' ')
  }

  private rowOf(r: Row, now: number): TaskRow {
    const name = String(r.name)
    const lastRunAt = instantOf(r.last_run_at)
    if (lastRunAt !== null) this.firstSeen.delete(name)
    else if (!this.firstSeen.has(name)) this.firstSeen.set(name, now)
    const meta = { lastRunAt: lastRunAt ?? this.firstSeen.get(name)!, totalRunCount: Number(r.total_run_count ?? 0) }
    const base = { oneOff: truthy(r.one_off), startTime: instantOf(r.start_time) }
    try {
      const { schedule, clocked } = scheduleOfRow(r)
      const definition: EntryDefinition = {
        name,
        task: String(r.task),
        args: jsonField<unknown[]>(r.args, '[]', 'args'),
        kwargs: jsonField<Record<string, unknown>>(r.kwargs, '{}', 'kwargs'),
        options: optionsOfRow(r),
        schedule,
        enabled: truthy(r.enabled),
      }
      if (!Array.isArray(definition.args)) throw new DjangoStoreError('args is not a JSON list')
      if (!definition.kwargs || typeof definition.kwargs !== 'object' || Array.isArray(definition.kwargs))
        throw new DjangoStoreError('kwargs is not a JSON object')
      scheduleOf(schedule, this.tz)
      this.reported.delete(name)
      return { ...base, clocked, problem: null, entry: { definition, meta } }
    } catch (error) {
      const problem = (error as Error).message
      const definition: EntryDefinition = {
        name,
        task: String(r.task),
        args: [],
        kwargs: {},
        options: {},
        schedule: { __type__: 'interval', every: 1, relative: false },
        enabled: truthy(r.enabled),
      }
      return { ...base, clocked: false, problem, entry: { definition, meta } }
    }
  }

  private async load(where: string, params: unknown[], now: number): Promise<TaskRow[]> {
    return (await this.client.query(`${SELECT} ${where}`, params)).map((r) => this.rowOf(r, now))
  }

  /** DatabaseScheduler.schedule_changed: the marker row moved (or this is the first read). */
  private async changed(): Promise<boolean> {
    const [row] = await this.client.query(`SELECT last_update FROM ${CHANGES} WHERE ident = 1`)
    const marker = row ? String(instantOf(row.last_update)) : 'none'
    const changed = this.marker !== marker
    // DatabaseScheduler's own line, so an operator sees an admin change taken up.
    if (changed && this.marker !== undefined) this.log.info('DatabaseScheduler: Schedule changed.')
    this.marker = marker
    return changed
  }

  private async reloadAll(now: number): Promise<void> {
    const rows = await this.load(`WHERE t.enabled = ${this.TRUE}`, [], now)
    this.rows = new Map(rows.map((row) => [row.entry.definition.name, row]))
    for (const name of this.firstSeen.keys()) if (!this.rows.has(name)) this.firstSeen.delete(name)
  }

  /** PeriodicTasks.update_changed: what a save through the ORM does, so Django-side readers (and other beats) reload. */
  private async bumpMarker(now: number): Promise<void> {
    const at = this.nowText(now)
    if ((await this.client.execute(`UPDATE ${CHANGES} SET last_update = ? WHERE ident = 1`, [at])) === 0) {
      await this.client.execute(`INSERT INTO ${CHANGES} (ident, last_update) VALUES (1, ?)`, [at]).catch(() => undefined)
    }
  }

  /** ModelEntry.is_due's one_off branch: a one-off task that ran is disabled, its count reset, last_run_at cleared (PeriodicTask.save). */
  private async disableOneOff(row: TaskRow, now: number): Promise<void> {
    const d = row.entry.definition
    const done = await this.client.execute(
      `UPDATE ${TASKS} SET enabled = ${this.FALSE}, total_run_count = 0, last_run_at = NULL, date_changed = ? WHERE name = ? AND enabled = ${this.TRUE} AND one_off = ${this.TRUE} AND total_run_count = ?`,
      [this.nowText(now), d.name, row.entry.meta.totalRunCount],
    )
    this.rows.delete(d.name)
    if (done) await this.bumpMarker(now)
  }

  /** What a row is at `now`: not runnable, a one-off to disable, or due at an instant. */
  private stateOf(row: TaskRow, now: number): { kind: 'skip' } | { kind: 'disable' } | { kind: 'at'; at: number } {
    const { entry } = row
    if (!entry.definition.enabled) return { kind: 'skip' }
    if (row.problem !== null) {
      if (!this.reported.has(entry.definition.name)) {
        this.reported.add(entry.definition.name)
        this.log.warning(`beat: PeriodicTask ${JSON.stringify(entry.definition.name)} skipped: ${row.problem}`)
      }
      return { kind: 'skip' }
    }
    // Start date first, as ModelEntry.is_due: no run (and no one-off check) before start_time.
    if (row.startTime !== null && now < row.startTime) return { kind: 'at', at: row.startTime }
    if (row.oneOff && entry.meta.totalRunCount > 0) return { kind: 'disable' }
    // A clocked schedule runs once; without one_off (which Django's validation requires) it would run again at every reload.
    if (row.clocked && entry.meta.totalRunCount > 0) return { kind: 'skip' }
    const schedule = scheduleOf(entry.definition.schedule, this.tz)
    if (schedule instanceof Solar) {
      const { at, daysWithout } = schedule.next(entry.meta.lastRunAt!)
      // Python's beat fails on such a row (see Solar.next); an operator should know why it waits.
      if (daysWithout > 0 && this.solarGaps.get(entry.definition.name) !== at) {
        this.solarGaps.set(entry.definition.name, at)
        this.log.warning(
          `beat: PeriodicTask ${JSON.stringify(entry.definition.name)}: ${schedule.event} does not occur at ${schedule.lat}, ${schedule.lon} for ${daysWithout} day(s) after ${new Date(entry.meta.lastRunAt!).toISOString()} (polar day or night); next run at ${new Date(at).toISOString()}`,
        )
      }
      return { kind: 'at', at }
    }
    return { kind: 'at', at: schedule.dueAt(entry.meta.lastRunAt!) }
  }

  async due(now: number): Promise<DueBatch> {
    if (await this.changed()) await this.reloadAll(now)
    let nextDueAt: number | null = null
    const later = (at: number) => {
      nextDueAt = nextDueAt === null ? at : Math.min(nextDueAt, at)
    }
    const candidates: string[] = []
    for (const row of [...this.rows.values()]) {
      const state = this.stateOf(row, now)
      if (state.kind === 'disable') await this.disableOneOff(row, now)
      else if (state.kind === 'at' && state.at <= now) candidates.push(row.entry.definition.name)
      else if (state.kind === 'at') later(state.at)
    }
    if (candidates.length === 0) return { entries: [], nextDueAt }
    // Another beat may have run these meanwhile (a run moves no marker): read them afresh.
    const fresh = await this.load(`WHERE t.name IN (${candidates.map(() => '?').join(', ')})`, candidates, now)
    const entries: Entry[] = []
    const seen = new Set<string>()
    for (const row of fresh) {
      const name = row.entry.definition.name
      seen.add(name)
      if (!row.entry.definition.enabled) {
        this.rows.delete(name)
        continue
      }
      this.rows.set(name, row)
      const state = this.stateOf(row, now)
      if (state.kind === 'disable') await this.disableOneOff(row, now)
      else if (state.kind === 'at' && state.at <= now) entries.push(row.entry)
      else if (state.kind === 'at') later(state.at)
    }
    for (const name of candidates) if (!seen.has(name)) this.rows.delete(name)
    return { entries, nextDueAt }
  }

  async reserve(r: ReserveRequest): Promise<ReserveOutcome> {
    const { fence, ...run } = r
    const [outcome] = await this.reserveAll([run], fence)
    return outcome!
  }

  /**
   * ModelEntry.__next__ and save: last_run_at now, total_run_count + 1 (and
   * date_changed, as the model's auto_now field moves on every save), here a
   * compare-and-set on the count the caller read. No marker bump: Python's
   * run saves carry no_changes.
   */
  async reserveAll(runs: ReserveRun[], fence?: Fence): Promise<ReserveOutcome[]> {
    if (runs.length === 0) return []
    if (fence && this.fenceCheck && !(await this.fenceCheck(fence))) return runs.map((): ReserveOutcome => 'fenced')
    const outcomes: ReserveOutcome[] = []
    for (const r of runs) {
      const at = this.nowText(r.ranAt)
      const done = await this.client.execute(
        `UPDATE ${TASKS} SET last_run_at = ?, total_run_count = ?, date_changed = ? WHERE name = ? AND enabled = ${this.TRUE} AND total_run_count = ?`,
        [at, r.expectedCount + 1, at, r.name, r.expectedCount],
      )
      if (done) {
        const row = this.rows.get(r.name)
        if (row) row.entry = { ...row.entry, meta: { lastRunAt: r.ranAt, totalRunCount: r.expectedCount + 1 } }
        const assumed = this.firstSeen.get(r.name)
        if (assumed !== undefined) this.assumed.set(r.name, assumed)
        this.firstSeen.delete(r.name)
        outcomes.push('ok')
        continue
      }
      const [current] = await this.client.query(`SELECT enabled FROM ${TASKS} WHERE name = ?`, [r.name])
      outcomes.push(current && truthy(current.enabled) ? 'stale' : 'gone')
    }
    return outcomes
  }

  async release(runs: ReleaseRun[]): Promise<number> {
    let n = 0
    for (const r of runs) {
      // A last run this beat only assumed (the row had none) goes back to none.
      const previousAt = this.assumed.get(r.name) === r.previous.lastRunAt ? null : r.previous.lastRunAt
      const done = await this.client.execute(
        `UPDATE ${TASKS} SET last_run_at = ?, total_run_count = ? WHERE name = ? AND total_run_count = ?`,
        [previousAt === null ? null : this.nowText(previousAt), r.previous.totalRunCount, r.name, r.expectedCount + 1],
      )
      if (done) {
        n += 1
        const row = this.rows.get(r.name)
        if (row) row.entry = { ...row.entry, meta: { ...r.previous } }
      }
    }
    return n
  }

  async reschedule(): Promise<void> {
    // Due times come from each row; there is no index to move.
  }

  /** As the row is, for `tsq schedule` and the mutex's fresh read: a run never made has no last run. */
  private asStored(r: Row): TaskRow {
    const row = this.rowOf(r, Date.now())
    return { ...row, entry: { ...row.entry, meta: { ...row.entry.meta, lastRunAt: instantOf(r.last_run_at) } } }
  }

  async get(name: string): Promise<Entry | null> {
    const [r] = await this.client.query(`${SELECT} WHERE t.name = ?`, [name])
    const row = r ? this.asStored(r) : null
    return row && row.problem === null ? row.entry : null
  }

  /** The rows tsq can run (one with bad JSON or no valid schedule is left out: beat logs why). */
  async list(): Promise<Entry[]> {
    return (await this.client.query(`${SELECT} ORDER BY t.name`))
      .map((r) => this.asStored(r))
      .filter((row) => row.problem === null)
      .map((row) => row.entry)
  }

  private readOnly(): never {
    throw new DjangoStoreError(
      'django-celery-beat entries are PeriodicTask rows: change them in the Django admin or through the ORM, not with tsq schedule',
    )
  }

  async save(): Promise<void> {
    this.readOnly()
  }

  async remove(): Promise<boolean> {
    this.readOnly()
  }

  async syncStatics(definitions: EntryDefinition[]): Promise<void> {
    if (definitions.length === 0) return
    throw new DjangoStoreError(
      `the app's beatSchedule (${definitions.map((d) => d.name).join(', ')}) is not written into django-celery-beat's tables by tsq; add them as PeriodicTask rows, or run beat without -A's schedule`,
    )
  }

  async watch(): Promise<() => Promise<void>> {
    // The marker row is read at every tick, as Python's scheduler does; beat's
    // loop wakes at least every max interval (5 s by default here, as Python's).
    return async () => undefined
  }

  async close(): Promise<void> {
    await this.client.close().catch(() => undefined)
  }
}
