// Size and nesting limits on the JSON doors other than a task body: control
// requests and replies and result metas are refused in one line, before they
// are parsed, when too long or too deep; a signed body is sized before its
// base64 is decoded.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  DEFAULT_MAX_BYTES,
  DEFAULT_MAX_DEPTH,
  MalformedMessageError,
  MessageLimitError,
  decodeBody,
  decodeControlReply,
  decodeControlRequest,
  decodeResultMeta,
} from '../../../src/protocol/index.js'

const deep = (d: number): string => `{"method": "ping", "arguments": {"x": ${'['.repeat(d)}${']'.repeat(d)}}}`
const oneLine =
  (pattern: RegExp) =>
  (e: unknown): boolean =>
    e instanceof MessageLimitError && pattern.test(e.message) && !e.message.includes('\n')

describe('limits on control messages and results', () => {
  it('a control request nested past the depth limit is refused; at the limit it reads', () => {
    assert.throws(() => decodeControlRequest(deep(DEFAULT_MAX_DEPTH)), oneLine(/^control request refused: nests deeper than 1000 levels$/))
    assert.equal(decodeControlRequest(deep(DEFAULT_MAX_DEPTH - 2)).method, 'ping')
  })

  it('a control reply nested too deep or too long is refused', () => {
    assert.throws(
      () => decodeControlReply(`{"w@h": ${'['.repeat(5000)}${']'.repeat(5000)}}`),
      oneLine(/^control reply refused: nests deeper/),
    )
    assert.throws(
      () => decodeControlReply(`{"w@h": "${'x'.repeat(DEFAULT_MAX_BYTES)}"}`),
      oneLine(/^control reply refused: \d+ characters, over the limit of 67108864$/),
    )
    assert.deepEqual(decodeControlReply('{"w@h": {"ok": "pong"}}'), [['w@h', { ok: 'pong' }]])
  })

  it('a result meta nested too deep is refused before it is parsed', () => {
    assert.throws(
      () => decodeResultMeta(`{"status": "SUCCESS", "result": ${'['.repeat(3000)}${']'.repeat(3000)}}`),
      oneLine(/^result refused: nests deeper/),
    )
  })

  it('a signed body longer than the base64 of the largest body is refused before it is decoded', () => {
    const store = { get: () => undefined }
    const limits = { maxDepth: 10, maxBytes: 3000 }
    const big = 'A'.repeat(4000 + 64 * 1024 + 4)
    assert.throws(
      () =>
        decodeBody(big, 'application/data', 'binary', {
          accept: new Set(['application/json']),
          verify: { store, digest: 'sha256' },
          limits,
        }),
      (e: unknown) => e instanceof MessageLimitError && /^signed body of \d+ bytes exceeds the limit of 69536 bytes/.test(e.message),
    )
    // Under the limit it gets as far as the signature check.
    assert.throws(
      () =>
        decodeBody('QUJD', 'application/data', 'binary', {
          accept: new Set(['application/json']),
          verify: { store, digest: 'sha256' },
          limits,
        }),
      (e: unknown) => e instanceof MalformedMessageError && !(e instanceof MessageLimitError),
    )
  })
})
