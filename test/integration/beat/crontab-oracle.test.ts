// spec §8.4: tsq's crontab next-run tables against Python Celery 5.2.6's own
// `crontab(...).remaining_estimate`, computed in this test's set-up by
// py/crontab_oracle.py with /usr/bin/python3.
//
// Across DST transitions Celery 5.2.6 (pytz, fixed-offset arithmetic) is not
// DST-correct: it skips times in a spring-forward gap, runs a fall-back hour's
// times twice, and lands an hour off the day after. tsq follows the issue's
// rule instead (a gap runs once at the first valid instant; a repeated hour
// runs each time once). Those differences are listed exactly below, so the
// test fails if either side changes.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { Crontab, type CrontabSpec } from '../../../src/beat/crontab.js'

const PY = '/usr/bin/python3'
const ORACLE = join(dirname(fileURLToPath(import.meta.url)), 'py', 'crontab_oracle.py')

interface Case extends CrontabSpec {
  id: string
  tz: string
  start: number
  count: number
}

const t = (iso: string) => Date.parse(iso) / 1000
const spec = (minute: string, hour = '*', day_of_week = '*', day_of_month = '*', month_of_year = '*') => ({
  minute,
  hour,
  day_of_week,
  day_of_month,
  month_of_year,
})

// Ordinary days: every expression, several zones.
const EXPRESSIONS: Array<[string, CrontabSpec]> = [
  ['every-minute', spec('*')],
  ['quarter-hours-office', spec('*/15', '9-17')],
  ['steps-in-range', spec('10-50/20', '*/3')],
  ['weekday-names', spec('0', '8', 'mon-fri')],
  ['wrap-around-dow', spec('30', '23', 'fri-mon')],
  ['dom-and-dow', spec('0', '12', 'fri', '13')],
  ['first-of-quarter', spec('0', '0', '*', '1', '1-12/3')],
  ['leap-day', spec('0', '6', '*', '29', '2')],
  ['lists', spec('5,35', '1,13', 'sun,wed', '*', '*')],
]
// Zones with DST only for expressions whose 12 runs stay inside one offset
// period: Celery's fixed-offset arithmetic is an hour off whenever a step
// crosses a DST change (see the DST test), months-long steps included.
const NO_DST_ZONES = ['UTC', 'Asia/Kolkata']
const DST_ZONES = ['America/New_York', 'Australia/Sydney']
const LONG_STEPS = new Set(['dom-and-dow', 'first-of-quarter', 'leap-day'])
const ORDINARY: Case[] = []
for (const [name, s] of EXPRESSIONS) {
  for (const tz of [...NO_DST_ZONES, ...(LONG_STEPS.has(name) ? [] : DST_ZONES)]) {
    ORDINARY.push({ id: `${name}@${tz}`, tz, start: t('2025-06-03T10:07:13Z'), count: 12, ...s })
  }
}

// DST: Europe/Berlin 2024-03-31 (02:00 -> 03:00) and 2024-10-27 (03:00 -> 02:00); New York 2024-03-10.
const DST: Case[] = [
  { id: 'berlin-spring-hourly', tz: 'Europe/Berlin', start: t('2024-03-30T23:00:00Z'), count: 6, ...spec('30') },
  { id: 'berlin-spring-daily-0230', tz: 'Europe/Berlin', start: t('2024-03-30T23:00:00Z'), count: 3, ...spec('30', '2') },
  { id: 'berlin-spring-range', tz: 'Europe/Berlin', start: t('2024-03-30T23:00:00Z'), count: 6, ...spec('*/20', '1-3') },
  { id: 'berlin-fall-half-hours', tz: 'Europe/Berlin', start: t('2024-10-26T22:00:00Z'), count: 10, ...spec('0,30') },
  { id: 'berlin-fall-daily-0230', tz: 'Europe/Berlin', start: t('2024-10-26T22:00:00Z'), count: 3, ...spec('30', '2') },
  { id: 'ny-spring-daily-0215', tz: 'America/New_York', start: t('2024-03-09T12:00:00Z'), count: 3, ...spec('15', '2') },
]

// Exact differences, as local ISO strings: [runs only Celery makes, runs only tsq makes].
const DST_DIFFS: Record<string, [string[], string[]]> = {
  // Celery skips 02:30 (it does not exist); tsq runs it once at 03:00.
  'berlin-spring-hourly': [['2024-03-31T06:30+02:00'], ['2024-03-31T03:00+02:00']],
  // Celery runs at 03:30 (02:30 + the old offset); tsq at 03:00, the first valid time.
  'berlin-spring-daily-0230': [['2024-03-31T03:30+02:00'], ['2024-03-31T03:00+02:00']],
  // Same instants: the gap's 02:00/02:20/02:40 collapse to one run at 03:00.
  'berlin-spring-range': [[], []],
  // Celery runs 02:00 and 02:30 twice; tsq once each, so its table reaches further.
  'berlin-fall-half-hours': [
    ['2024-10-27T02:00+01:00', '2024-10-27T02:30+01:00'],
    ['2024-10-27T04:30+01:00', '2024-10-27T05:00+01:00'],
  ],
  // Celery lands at 01:30 the day after (fixed-offset arithmetic); tsq at 02:30.
  'berlin-fall-daily-0230': [['2024-10-28T01:30+01:00'], ['2024-10-29T02:30+01:00']],
  'ny-spring-daily-0215': [['2024-03-10T03:15-04:00'], ['2024-03-10T03:00-04:00']],
}

function celeryTables(cases: Case[]): Record<string, number[]> {
  const res = spawnSync(PY, [ORACLE], { input: JSON.stringify(cases), encoding: 'utf8', timeout: 60_000 })
  if (res.status !== 0) throw new Error(`crontab_oracle.py failed: ${res.stderr}`)
  return JSON.parse(res.stdout) as Record<string, number[]>
}

function tsqTable(c: Case): number[] {
  const cron = new Crontab(c, c.tz)
  const out: number[] = []
  let last = c.start * 1000
  for (let i = 0; i < c.count; i++) {
    last = cron.nextAfter(last)
    out.push(last / 1000)
  }
  return out
}

function local(epochS: number, tz: string): string {
  const f = new Intl.DateTimeFormat('sv-SE', {
    timeZone: tz,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    timeZoneName: 'longOffset',
  })
  const s = f.format(new Date(epochS * 1000)) // 2024-03-31 03:00 GMT+02:00
  const m = /^(\S+) (\S+) GMT(.*)$/.exec(s)!
  return `${m[1]}T${m[2]}${(m[3] || '+00:00').replace('\u2212', '-')}`
}

const skip = existsSync(PY) ? false : `${PY} (Debian's python3-celery) is not installed`

test('spec §8.4: crontab next runs match Celery 5.2.6 on ordinary days', { skip }, () => {
  const celery = celeryTables(ORDINARY)
  for (const c of ORDINARY)
    assert.deepEqual(
      tsqTable(c).map((x) => local(x, c.tz)),
      celery[c.id]!.map((x) => local(x, c.tz)),
      c.id,
    )
})

test('spec §8.4: across DST, tsq differs from Celery 5.2.6 exactly where Celery is not DST-correct', { skip }, () => {
  const celery = celeryTables(DST)
  for (const c of DST) {
    const ours = tsqTable(c).map((x) => local(x, c.tz))
    const theirs = celery[c.id]!.map((x) => local(x, c.tz))
    const onlyCelery = theirs.filter((x) => !ours.includes(x))
    const onlyTsq = ours.filter((x) => !theirs.includes(x))
    assert.deepEqual([onlyCelery, onlyTsq], DST_DIFFS[c.id], `${c.id}\n celery: ${theirs.join(' ')}\n tsq:    ${ours.join(' ')}`)
  }
})
