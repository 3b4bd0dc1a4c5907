import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseUmask, resolveCredentials } from '../../../src/process/privileges.js'

describe('--umask as Celery reads it', () => {
  it('is octal with a leading 0, else decimal', () => {
    assert.equal(parseUmask('022'), 0o22)
    assert.equal(parseUmask('0077'), 0o77)
    assert.equal(parseUmask('0'), 0)
    assert.equal(parseUmask('18'), 18)
  })

  it('refuses what is not a mask', () => {
    for (const raw of ['', '0999', '0o22', 'x', '-1', '1.5', '1000', '01000']) {
      assert.throws(() => parseUmask(raw), { code: 'BAD_ARGUMENT', message: /--umask must be a mask/ }, raw)
    }
  })
})

describe('--uid/--gid resolution', () => {
  it("takes names and ids; --uid alone brings the user's primary group", () => {
    assert.deepEqual(resolveCredentials('root', undefined), { uid: 0, gid: 0 })
    assert.deepEqual(resolveCredentials('0', undefined), { uid: 0, gid: 0 })
    assert.deepEqual(resolveCredentials(undefined, 'root'), { uid: undefined, gid: 0 })
    assert.deepEqual(resolveCredentials('root', '12345'), { uid: 0, gid: 12345 })
    assert.deepEqual(resolveCredentials(undefined, undefined), { uid: undefined, gid: undefined })
  })

  it('names a user or group that does not exist', () => {
    assert.throws(() => resolveCredentials('no-such-user-tsq', undefined), {
      code: 'BAD_ARGUMENT',
      message: '--uid: user does not exist: no-such-user-tsq',
    })
    assert.throws(() => resolveCredentials(undefined, 'no-such-group-tsq'), {
      code: 'BAD_ARGUMENT',
      message: '--gid: group does not exist: no-such-group-tsq',
    })
    assert.throws(() => resolveCredentials('4000000000', undefined), {
      code: 'BAD_ARGUMENT',
      message: /--uid: user does not exist: 4000000000/,
    })
  })
})
