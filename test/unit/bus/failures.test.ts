import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseInequivalentArg } from '../../../src/bus/declare.js'
import { routeFailure } from '../../../src/bus/failures.js'
import {
  describeArchived,
  errorRepr,
  FIRST_FAILURE_HEADER,
  LAST_ERROR_HEADER,
  resendFromContext,
  resendFromMessage,
} from '../../../src/bus/messages.js'
import { encodeTaskV2 } from '../../../src/protocol/index.js'

const settings = { maxRetries: 10, archiveTtlMs: 1000, archiveMaxLength: 10 }

describe("routeFailure (the library's EventHandler.retry, without its jitter)", () => {
  it('retry n goes to step n and waits 2ⁿ s; its retries header is n + 1', () => {
    assert.deepEqual(routeFailure(0, 10, settings), { kind: 'retry', step: 0, delaySeconds: 1, retries: 1 })
    assert.deepEqual(routeFailure(2, 10, settings), { kind: 'retry', step: 2, delaySeconds: 4, retries: 3 })
  })
  it('past max_retries: the archive, retries header max_retries + 1', () => {
    assert.deepEqual(routeFailure(3, 3, settings), { kind: 'archive', retries: 4 })
    assert.deepEqual(routeFailure(10, 10, settings), { kind: 'archive', retries: 11 })
  })
  it('an explicit countdown picks step floor(log2(countdown)), at most the last', () => {
    assert.deepEqual(routeFailure(0, 10, settings, 5), { kind: 'retry', step: 2, delaySeconds: 4, retries: 1 })
    assert.equal((routeFailure(0, 10, settings, 1e9) as { step: number }).step, 9)
  })
  it('no steps (AMQP_EVENTS_MAX_RETRIES=0): archived at once; no archive either: dropped', () => {
    assert.equal(routeFailure(0, 0, { ...settings, maxRetries: 0 }).kind, 'archive')
    assert.equal(routeFailure(0, 0, { maxRetries: 0, archiveTtlMs: 0, archiveMaxLength: 0 }).kind, 'drop')
  })
})

describe('resends keep the event, change retries and notes', () => {
  const encoded = encodeTaskV2('billing.invoice.paid', { id: 'id-1', args: [{ id: 42, total: 9.5 }], kwargs: {}, origin: 'gen1@h' })
  const original = {
    body: Buffer.from(encoded.body),
    properties: {
      contentType: 'application/json',
      contentEncoding: 'utf-8',
      headers: { ...(encoded.headers as Record<string, never>), 'x-death': [{ count: 1 }] as never, trace: 'abc' },
      deliveryMode: 2 as const,
      priority: 0,
      correlationId: 'id-1',
      replyTo: 'r',
    },
  }

  it("from the message: the body byte for byte, retries and eta changed, x-death dropped, the sender's header kept", () => {
    const at = new Date('2024-01-02T03:04:05.000Z')
    const out = resendFromMessage(original, {
      retries: 1,
      eta: at,
      origin: 'w1@h',
      failure: { error: "ValueError('x')", traceback: null, at },
    })
    assert.equal(out.body.toString(), encoded.body)
    const h = out.properties.headers
    assert.equal(h.retries, 1)
    assert.equal(h.eta, '2024-01-02T03:04:05+00:00')
    assert.equal(h.origin, 'w1@h')
    assert.equal(h.trace, 'abc')
    assert.equal(h['x-death'], undefined)
    assert.equal(h[LAST_ERROR_HEADER], "ValueError('x')")
    assert.equal(h[FIRST_FAILURE_HEADER], '2024-01-02T03:04:05+00:00')
  })

  it('a replay resets retries and drops the failure notes', () => {
    const failed = resendFromMessage(original, { retries: 4, eta: null, failure: { error: "E('x')", traceback: 'tb', at: new Date() } })
    const replay = resendFromMessage(failed, { retries: 0, eta: null, replayedAt: new Date() })
    assert.equal(replay.properties.headers.retries, 0)
    assert.equal(replay.properties.headers[LAST_ERROR_HEADER], undefined)
    assert.ok(replay.properties.headers['x-tsq-replayed-at'])
  })

  it("from a run's context: the same id, args and the first failure kept across retries", () => {
    const ctx = {
      id: 'id-2',
      name: 'e',
      args: [1],
      kwargs: { k: 2 },
      retries: 1,
      rootId: 'id-2',
      parentId: null,
      group: null,
      hostname: 'w@h',
      headers: { [FIRST_FAILURE_HEADER]: '2020-01-01T00:00:00+00:00' },
    }
    const out = resendFromContext(ctx, { retries: 2, eta: null, failure: { error: "TypeError('t')", traceback: 'stack', at: new Date() } })
    const d = describeArchived(out, 's', 'x')
    assert.equal(d.id, 'id-2')
    assert.equal(d.event, 'e')
    assert.equal(d.retries, 2)
    assert.deepEqual(d.args, [1])
    assert.deepEqual(d.kwargs, { k: 2 })
    assert.equal(d.firstFailure, '2020-01-01T00:00:00+00:00')
    assert.equal(d.lastError, "TypeError('t')")
    assert.equal(d.traceback, 'stack')
  })

  it('a message that is not a task message is still described', () => {
    const d = describeArchived(
      {
        body: Buffer.from('junk'),
        properties: { contentType: 'text/plain', contentEncoding: '', headers: {}, deliveryMode: 2, priority: 0, correlationId: 'c1' },
      },
      's',
      'x',
    )
    assert.equal(d.id, 'c1')
    assert.equal(d.event, '?')
  })

  it('errorRepr writes an error as Python shows an exception', () => {
    assert.equal(errorRepr(new TypeError('boom')), "TypeError('boom')")
  })
})

describe('parseInequivalentArg (RabbitMQ 406 text)', () => {
  it('reads the value the queue has', () => {
    assert.deepEqual(
      parseInequivalentArg(
        "PRECONDITION_FAILED - inequivalent arg 'x-message-ttl' for queue 'b:retry' in vhost '/': received the value '2000' of type 'signedint' but current is the value '1000' of type 'signedint'",
      ),
      { key: 'x-message-ttl', current: 1000 },
    )
    assert.deepEqual(
      parseInequivalentArg(
        "inequivalent arg 'x-dead-letter-exchange' for queue 'q' in vhost '/': received the value 'a' of type 'longstr' but current is none",
      ),
      { key: 'x-dead-letter-exchange', current: undefined },
    )
    assert.deepEqual(
      parseInequivalentArg(
        "inequivalent arg 'x-queue-mode' for queue 'q' in vhost '/': received none but current is the value 'lazy' of type 'longstr'",
      ),
      { key: 'x-queue-mode', current: 'lazy' },
    )
  })
  it("reads RabbitMQ 3.10's shorter form, typed as declared", () => {
    const text =
      "PRECONDITION_FAILED - inequivalent arg 'x-max-length' for queue 'smk1:archived' in vhost '/': received '5' but current is '10000'"
    assert.deepEqual(parseInequivalentArg(text, { 'x-max-length': 5 }), { key: 'x-max-length', current: 10000 })
    assert.deepEqual(
      parseInequivalentArg("inequivalent arg 'x-dead-letter-exchange' for queue 'q' in vhost '/': received 'a:retry' but current is 'b'", {
        'x-dead-letter-exchange': 'a:retry',
      }),
      { key: 'x-dead-letter-exchange', current: 'b' },
    )
  })
})
