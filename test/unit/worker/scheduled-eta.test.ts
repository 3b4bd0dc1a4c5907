// inspect scheduled's eta as Celery's worker prints it: with its UTC offset.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { awareIso } from '../../../src/worker/control/control-handlers.js'

describe("awareIso: a message eta as Celery's Request.eta.isoformat()", () => {
  it('a naive time (Python client, utcnow()) is UTC by default: +00:00 is added', () => {
    assert.equal(awareIso('2026-12-07T05:30:08.351696', {}), '2026-12-07T05:30:08.351696+00:00')
    assert.equal(awareIso('2026-12-07T05:30:08.351696', { enable_utc: true, timezone: 'UTC' }), '2026-12-07T05:30:08.351696+00:00')
  })

  it('Z is spelled +00:00; an offset already there is kept', () => {
    assert.equal(awareIso('2026-12-07T05:30:08.351Z', {}), '2026-12-07T05:30:08.351+00:00')
    assert.equal(awareIso('2026-12-07T06:30:08.351696+01:00', {}), '2026-12-07T06:30:08.351696+01:00')
  })

  it('a naive time in an app whose timezone is not UTC is left as sent; no eta stays null', () => {
    assert.equal(awareIso('2026-12-07T05:30:08', { timezone: 'Europe/Paris' }), '2026-12-07T05:30:08')
    assert.equal(awareIso(null, {}), null)
  })
})
