// The transports' ids (delivery tags, consumer tags, lock tokens, reply
// queues) are version-4 UUIDs made without node:crypto: the same form as
// crypto.randomUUID's, and distinct.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { uuid4 } from '../../../src/transport/uuid.js'

const UUID4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

it('[uuid] well-formed version-4 UUIDs, distinct, with every hex digit used in each random place', () => {
  const seen = new Set<string>()
  const digits = Array.from({ length: 36 }, () => new Set<string>())
  for (let i = 0; i < 20_000; i += 1) {
    const id = uuid4()
    assert.match(id, UUID4)
    seen.add(id)
    for (let p = 0; p < 36; p += 1) digits[p]!.add(id[p]!)
  }
  assert.equal(seen.size, 20_000)
  for (let p = 0; p < 36; p += 1) {
    // Dashes, the version digit and the variant digit are fixed or narrowed; every other place is random.
    const expected = [8, 13, 18, 23].includes(p) ? 1 : p === 14 ? 1 : p === 19 ? 4 : 16
    assert.equal(digits[p]!.size, expected, `place ${p}`)
  }
})
