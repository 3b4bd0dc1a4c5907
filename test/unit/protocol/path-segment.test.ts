// Names as path segments for the file:// stores: any task, group, chord or lock
// id and any queue name maps reversibly to one file name that stays inside its
// folder (never `.`, `..`, a separator or NUL), with a fixed-seed fast-check property.
import assert from 'node:assert/strict'
import { join, relative, resolve, sep } from 'node:path'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { escapeSegment, isContainedSegment, MAX_SEGMENT, PathNameError, unescapeSegment } from '../../../src/protocol/index.js'

const SEED = 20261207
const ROOT = resolve('/srv/store/results')
const inside = (segment: string) => {
  const rel = relative(ROOT, resolve(join(ROOT, segment)))
  return rel !== '' && !rel.startsWith('..') && !rel.includes(sep)
}
const fits = (s: string) => {
  try {
    escapeSegment(s, 'uri')
    escapeSegment(s, 'broker')
    return true
  } catch (error) {
    if (error instanceof PathNameError) return false
    throw error
  }
}

describe('escapeSegment', () => {
  it('escapes the names that are paths', () => {
    assert.equal(escapeSegment('..'), '%2E.')
    assert.equal(escapeSegment('.'), '%2E')
    assert.equal(escapeSegment('a/b'), 'a%2Fb')
    assert.equal(escapeSegment('a\0b'), 'a%00b')
    assert.equal(escapeSegment('a\\b'), 'a%5Cb')
    assert.equal(escapeSegment(''), '%')
    assert.equal(escapeSegment('.hidden', 'uri'), '%2Ehidden')
    for (const s of ['..', '.', 'a/b', 'a\0b', '', '../../etc/passwd', '/abs']) {
      for (const a of ['broker', 'uri'] as const) {
        assert.ok(isContainedSegment(escapeSegment(s, a)), `${JSON.stringify(s)} (${a})`)
        assert.ok(inside(escapeSegment(s, a)), `${JSON.stringify(s)} (${a})`)
      }
    }
  })

  it('keeps the names older versions wrote: uuids and queues as they are, encodeURIComponent for results and locks', () => {
    assert.equal(escapeSegment('0b1f8a6e-1c2d-4e5f-8a9b-0c1d2e3f4a5b'), '0b1f8a6e-1c2d-4e5f-8a9b-0c1d2e3f4a5b')
    assert.equal(escapeSegment('w1@host.celery.pidbox'), 'w1@host.celery.pidbox')
    for (const id of ['proj.add-lock-9e107d9d372bb6826bd81d3542a419d6', "it's (a) *star*!~", 'ünï cödé', 'a b+c&d=e?f#g', 'x@y']) {
      assert.equal(escapeSegment(id, 'uri'), encodeURIComponent(id))
    }
  })

  it('refuses an escaped name over the limit with a PathNameError', () => {
    assert.throws(() => escapeSegment('x'.repeat(MAX_SEGMENT + 1)), PathNameError)
    assert.equal(escapeSegment('x'.repeat(MAX_SEGMENT)).length, MAX_SEGMENT)
  })

  it('reads back lone surrogates and refuses what it never wrote', () => {
    assert.equal(escapeSegment('\ud800'), '%uD800')
    assert.equal(unescapeSegment('%uD800'), '\ud800')
    assert.notEqual(escapeSegment('\ud800'), escapeSegment('\ufffd'))
    for (const bad of ['%G1', '%u12', 'a%2', '%FF']) assert.throws(() => unescapeSegment(bad), Error)
  })

  it('property: no generated id resolves outside its folder, and every one reads back', () => {
    const ids = fc.oneof(
      fc.string16bits({ maxLength: 40 }),
      fc.fullUnicodeString({ maxLength: 40 }),
      fc.array(fc.constantFrom('.', '..', '/', '\\', '\0', '%', '~', 'a', '%2E', '%u'), { maxLength: 12 }).map((parts) => parts.join('')),
    )
    fc.assert(
      fc.property(ids, (id) => {
        fc.pre(fits(id))
        for (const a of ['broker', 'uri'] as const) {
          const seg = escapeSegment(id, a)
          assert.ok(isContainedSegment(seg), JSON.stringify(seg))
          assert.ok(inside(seg), JSON.stringify(seg))
          assert.ok(!seg.startsWith('.'), JSON.stringify(seg))
          assert.equal(unescapeSegment(seg), id)
        }
      }),
      { seed: SEED, numRuns: 2000 },
    )
  })

  it('property: two different ids never share a file', () => {
    fc.assert(
      fc.property(fc.string16bits({ maxLength: 20 }), fc.string16bits({ maxLength: 20 }), (a, b) => {
        fc.pre(a !== b)
        assert.notEqual(escapeSegment(a, 'uri'), escapeSegment(b, 'uri'))
        assert.notEqual(escapeSegment(a, 'broker'), escapeSegment(b, 'broker'))
      }),
      { seed: SEED, numRuns: 1000 },
    )
  })
})
