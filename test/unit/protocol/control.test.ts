import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  MalformedMessageError,
  controlRequestHeaders,
  decodeControlReply,
  decodeControlRequest,
  encodeControlReply,
  encodeControlRequest,
  matchesDestination,
} from '../../../src/protocol/index.js'
import { loadFixture } from './fixtures.js'

const f = loadFixture<{ request: string; reply: string; error_reply: string }>('spec-3-control.json')

describe('spec §3.2 control request', () => {
  it('encodes the captured ping request byte for byte', () => {
    assert.equal(
      encodeControlRequest({
        method: 'ping',
        arguments: {},
        destination: null,
        pattern: null,
        matcher: null,
        ticket: '7ad0ce0b-aa6b-493b-999c-0d8295a90d11',
        reply_to: { exchange: 'reply.celery.pidbox', routing_key: '35061a8c-ab18-306f-9fe4-280297bf4bd4' },
      }),
      f.request,
    )
  })
  it('a cast omits ticket and reply_to', () => {
    assert.equal(
      encodeControlRequest({ method: 'heartbeat', arguments: {}, destination: ['w1@vm'], pattern: null, matcher: null }),
      '{"method": "heartbeat", "arguments": {}, "destination": ["w1@vm"], "pattern": null, "matcher": null}',
    )
  })
  it('decodes and re-encodes the captured request', () => {
    const req = decodeControlRequest(f.request)
    assert.equal(req.method, 'ping')
    assert.equal(req.ticket, '7ad0ce0b-aa6b-493b-999c-0d8295a90d11')
    assert.equal(encodeControlRequest(req), f.request)
  })
  it('rejects malformed requests', () => {
    for (const bad of [
      '[]',
      '{"arguments": {}}',
      '{"method": "x", "arguments": []}',
      '{"method": "x", "destination": [1]}',
      '{"method": "x", "reply_to": "q"}',
      'nope',
    ]) {
      assert.throws(() => decodeControlRequest(bad), MalformedMessageError, bad)
    }
  })
  it('headers carry clock and expires', () => {
    assert.deepEqual(controlRequestHeaders(41, 1795325031.5), { clock: 41, expires: 1795325031.5 })
  })
})

describe('spec §3.3 destination rule', () => {
  const req = (destination: string[] | null, pattern: string | null = null, matcher: string | null = null) => ({
    destination,
    pattern,
    matcher,
  })
  const table: Array<[ReturnType<typeof req>, string, boolean]> = [
    [req(null), 'w1@vm', true],
    [req([]), 'w1@vm', true],
    [req(['w1@vm', 'w2@vm']), 'w2@vm', true],
    [req(['w1@vm']), 'w2@vm', false],
    [req(['w1@vm'], 'w2*', 'glob'), 'w2@vm', false],
    [req(null, 'w*@vm', 'glob'), 'w7@vm', true],
    [req(null, 'w?@vm', 'glob'), 'w10@vm', false],
    [req(null, 'w[12]@*', 'glob'), 'w2@host', true],
    [req(null, 'w[!12]@*', 'glob'), 'w2@host', false],
    [req(null, 'w1', 'glob'), 'w1@vm', false],
    [req(null, 'w1', 'pcre'), 'w1@vm', true],
    [req(null, 'vm', 'pcre'), 'w1@vm', false],
    [req(null, 'w\\d+@', 'pcre'), 'w12@vm', true],
    [req(null, 'w1', 'nosuch'), 'w1@vm', false],
    [req(null, 'w1', null), 'w1@vm', true],
  ]
  for (const [r, node, expected] of table) {
    it(`${JSON.stringify(r)} on ${node} → ${expected}`, () => assert.equal(matchesDestination(r, node), expected))
  }
})

describe('spec §3.3 reply body', () => {
  it('encodes {node: reply}', () => {
    assert.equal(encodeControlReply('w1@vm', { ok: 'pong' }), f.reply)
    assert.equal(encodeControlReply('w1@vm', { error: "KeyError('nosuchcommand')" }), f.error_reply)
  })
  it('decodes to entries', () => {
    assert.deepEqual(decodeControlReply(f.reply), [['w1@vm', { ok: 'pong' }]])
    assert.throws(() => decodeControlReply('[1]'), MalformedMessageError)
  })
})
