// The dashboard's JSON request bodies that become control requests or beat
// entries: one nested past the depth a worker accepts is a 400 with one line,
// not a stack overflow in whatever sends it on.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { entryFieldsOf } from '../../../src/dashboard/features-api.js'

describe('dashboard request bodies', () => {
  it('an entry body nested past 1000 levels is refused; a plain one reads', () => {
    const deep = `{"args": ${'['.repeat(200_000)}${']'.repeat(200_000)}}`
    assert.throws(
      () => entryFieldsOf(deep),
      (e: unknown) => (e as { status?: number }).status === 400 && /nests deeper than 1000 levels/.test((e as Error).message),
    )
    assert.deepEqual(entryFieldsOf('{"relative": true}'), { relative: true })
  })
})
