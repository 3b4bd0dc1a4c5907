// The settings registry (src/config/settings.ts) against the installed Python
// Celery's celery.app.defaults: the same names, and Celery's default for each.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { describe, it } from 'node:test'
import { SETTINGS } from '../../src/config/settings.js'

// The installed Celery's settings and defaults, as JSON (a timedelta in seconds, inf as "inf").
const DUMP = `
import json, math, datetime
from celery.app.defaults import NAMESPACES, flatten
def js(v):
    if isinstance(v, datetime.timedelta): return v.total_seconds()
    if isinstance(v, float) and math.isinf(v): return 'inf'
    if isinstance(v, (tuple, set, frozenset)): return list(v)
    return v
print(json.dumps({k: js(o.default) for k, o in flatten(NAMESPACES)}))
`

function celeryDefaults(): Record<string, unknown> | string {
  try {
    return JSON.parse(execFileSync('/usr/bin/python3', ['-c', DUMP], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })) as Record<
      string,
      unknown
    >
  } catch (error) {
    const reason = `Python Celery 5.2.6 not importable by /usr/bin/python3 (${(error as Error).message.split('\n')[0]})`
    if (process.env.CI) throw new Error(`CI requires it: ${reason}`, { cause: error })
    return reason
  }
}

describe('settings registry against the installed Celery (celery.app.defaults)', () => {
  const celery = celeryDefaults()
  const skip = typeof celery === 'string' ? celery : false

  it("lists every one of Celery's settings, and none Celery lacks", { skip }, () => {
    const theirs = Object.keys(celery as Record<string, unknown>).sort()
    const ours = Object.keys(SETTINGS).sort()
    assert.deepEqual(
      theirs.filter((n) => !SETTINGS[n]),
      [],
      "settings of Celery's the registry lacks",
    )
    assert.deepEqual(
      ours.filter((n) => !(n in (celery as object))),
      [],
      'registry names Celery does not have',
    )
    assert.equal(ours.length, 169)
  })

  it("gives each Celery's default, so restating a default is never refused", { skip }, () => {
    for (const [name, value] of Object.entries(celery as Record<string, unknown>)) {
      const ours = SETTINGS[name]?.default
      assert.deepEqual(ours === Infinity ? 'inf' : ours, value, name)
    }
  })
})
