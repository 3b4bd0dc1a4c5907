// Seeded random round-trips (fast-check is not a dependency; a fixed seed keeps failures reproducible).
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  PyFloat,
  decodeTaskMessage,
  dumps,
  encodeTaskV2,
  loads,
  controlRequestHeaders,
  decodeControlRequest,
  encodeControlRequest,
} from '../../../src/protocol/index.js'

function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const CHARS = ['a', 'Z', ' ', '"', "'", '\\', '\n', '\t', '\x00', '\x7f', 'é', '\u2028', '中', '😀', '/', '%']

function value(r: () => number, depth: number): unknown {
  const k = Math.floor(r() * (depth > 3 ? 5 : 7))
  switch (k) {
    case 0:
      return null
    case 1:
      return r() < 0.5
    case 2:
      return Math.floor((r() - 0.5) * 2 ** 40)
    case 3:
      return (r() - 0.5) * 10 ** Math.floor(r() * 40 - 20) || 0.5
    case 4:
      return Array.from({ length: Math.floor(r() * 8) }, () => CHARS[Math.floor(r() * CHARS.length)]).join('')
    case 5:
      return Array.from({ length: Math.floor(r() * 4) }, () => value(r, depth + 1))
    default:
      return Object.fromEntries(
        Array.from({ length: Math.floor(r() * 4) }, (_, i) => [`k${i}${CHARS[Math.floor(r() * 6)]}`, value(r, depth + 1)]),
      )
  }
}

function unwrapFloats(v: unknown): unknown {
  if (v instanceof PyFloat) return v.value
  if (Array.isArray(v)) return v.map(unwrapFloats)
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, unwrapFloats(x)]))
  return v
}

describe('round-trips over 500 seeded random values', () => {
  const r = rng(20240102)
  const values = Array.from({ length: 500 }, () => value(r, 0))
  it('loads(dumps(v)) equals v', () => {
    for (const v of values) assert.deepEqual(loads(dumps(v)), v)
  })
  it('the NaN-aware parser agrees with JSON.parse, and pyfloat mode re-dumps identically', () => {
    for (const v of values) {
      const text = dumps(v)
      const slow = loads(text, { floats: 'pyfloat' })
      assert.deepEqual(unwrapFloats(slow), JSON.parse(text))
      assert.equal(dumps(slow), text)
    }
  })
  it('encodeTaskV2 → decodeTaskMessage keeps args and kwargs', () => {
    for (let i = 0; i < values.length; i += 2) {
      const args = [values[i], values[i + 1]]
      const kwargs = { a: values[i], 'b"': values[i + 1] }
      const m = encodeTaskV2('t.x', { origin: 'gen1@h', args, kwargs })
      const req = decodeTaskMessage({ headers: m.headers, body: m.body, contentType: m.contentType, contentEncoding: m.contentEncoding })
      assert.deepEqual(req.args, args)
      assert.deepEqual(req.kwargs, kwargs)
      assert.ok(req.argsrepr.length <= 1024 + 20)
    }
  })
  it('control request encode → decode → encode is stable', () => {
    for (let i = 0; i < 50; i++) {
      const v = values[i]
      const text = encodeControlRequest({
        method: 'm',
        arguments: { v },
        destination: i % 2 ? ['a@b'] : null,
        pattern: null,
        matcher: null,
      })
      assert.equal(encodeControlRequest(decodeControlRequest(text)), text)
    }
    assert.deepEqual(controlRequestHeaders(1, 0), { clock: 1, expires: 0 })
  })
})
