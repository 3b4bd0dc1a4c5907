// A slot applies toJSON() before structured clone drops the prototype that
// has it, so threads and prefork store a result as the solo pool does.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { dumps } from '../../../src/protocol/index.js'
import { withToJSONApplied } from '../../../src/worker/pools/wire-value.js'

class Money {
  constructor(private readonly cents: number) {}
  toJSON() {
    return { amount: (this.cents / 100).toFixed(2), currency: 'EUR' }
  }
}

it('[wire] toJSON() is applied at any depth, in arrays, Sets and Maps; the clone then encodes as the value itself does', () => {
  const value = {
    total: new Money(1234),
    lines: [new Money(5), 7],
    tags: new Set([new Money(1)]),
    byId: new Map([['a', new Money(2)]]),
    when: new Date(0),
  }
  const applied = withToJSONApplied(value)
  assert.equal(dumps(structuredClone(applied)), dumps(value))
  assert.notEqual(dumps(structuredClone(value)), dumps(value), 'without it the clone loses toJSON')
  assert.ok((applied as { when: unknown }).when instanceof Date, 'a Date is kept for the clone')
})

it('[wire] a value without toJSON comes back as the same object; a cycle is left for the encoder; toJSON returning this is not followed', () => {
  const plain = { a: [1, { b: 2 }], m: new Map([[1, 2]]) }
  assert.equal(withToJSONApplied(plain), plain)
  const cycle: Record<string, unknown> = {}
  cycle.self = cycle
  assert.equal(withToJSONApplied(cycle), cycle)
  const selfish = {
    x: 1,
    toJSON() {
      return this
    },
  }
  assert.equal(withToJSONApplied(selfish), selfish)
})
