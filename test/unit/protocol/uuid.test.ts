// protocol/uuid.ts: the ids of every send, in crypto.randomUUID's form.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { uuid4 } from '../../../src/protocol/uuid.js'

describe('uuid4', () => {
  it('writes version 4, RFC 4122 variant, lower-case hex, across several refills of its pool', () => {
    const seen = new Set<string>()
    const nibbles = new Set<string>()
    for (let i = 0; i < 2000; i++) {
      const id = uuid4()
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      seen.add(id)
      for (const ch of id.replace(/-/g, '').slice(20)) nibbles.add(ch)
    }
    assert.equal(seen.size, 2000, 'no id repeats')
    assert.equal(nibbles.size, 16, 'every hex digit turns up in the random part')
  })

  it('each id is its own string: the scratch buffer it was written in is not shared out', () => {
    const a = uuid4()
    const copy = `${a}`
    uuid4()
    assert.equal(a, copy)
  })
})
