// The trace context of a task message as opentelemetry-instrumentation-celery
// writes and reads it (W3C traceparent, baggage as Python's propagators), the
// span names and attributes it sets on apply_async/<task> and run/<task>, and
// the queue-wait figure from tsq's sent-at header.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  consumerAttributes,
  consumerSpanName,
  formatBaggage,
  formatTraceparent,
  parseBaggage,
  parseTraceparent,
  producerAttributes,
  producerSpanName,
  queueWaitSeconds,
} from '../../../src/protocol/index.js'

const TRACE = '0af7651916cd43dd8448eb211c80319c'
const SPAN = 'b7ad6b7169203331'

describe('[trace headers] traceparent as W3C and Python read it', () => {
  it('writes version 00 with the flags as two hex digits', () => {
    assert.equal(formatTraceparent({ traceId: TRACE, spanId: SPAN, traceFlags: 1 }), `00-${TRACE}-${SPAN}-01`)
    assert.equal(formatTraceparent({ traceId: TRACE, spanId: SPAN, traceFlags: 0 }), `00-${TRACE}-${SPAN}-00`)
  })

  it('reads what Python writes, and refuses what its propagator refuses', () => {
    assert.deepEqual(parseTraceparent(`00-${TRACE}-${SPAN}-01`), { traceId: TRACE, spanId: SPAN, traceFlags: 1 })
    assert.deepEqual(parseTraceparent(`01-${TRACE}-${SPAN}-01-future`), { traceId: TRACE, spanId: SPAN, traceFlags: 1 })
    assert.equal(parseTraceparent(`00-${TRACE}-${SPAN}-01-extra`), null)
    assert.equal(parseTraceparent(`ff-${TRACE}-${SPAN}-01`), null)
    assert.equal(parseTraceparent(`00-${'0'.repeat(32)}-${SPAN}-01`), null)
    assert.equal(parseTraceparent(`00-${TRACE}-${'0'.repeat(16)}-01`), null)
    assert.equal(parseTraceparent(`00-${TRACE.toUpperCase()}-${SPAN}-01`), null)
    assert.equal(parseTraceparent(undefined), null)
    assert.equal(parseTraceparent(42), null)
  })
})

describe('[trace headers] baggage', () => {
  it("reads Python's quote_plus form and JavaScript's percent form alike", () => {
    assert.deepEqual(parseBaggage('user=alice+smith,tenant=a%2Cb;prop=1'), [
      { key: 'user', value: 'alice smith' },
      { key: 'tenant', value: 'a,b', metadata: 'prop=1' },
    ])
    assert.deepEqual(parseBaggage('user=alice%20smith'), [{ key: 'user', value: 'alice smith' }])
  })

  it('writes percent-encoded entries, and no header for none', () => {
    assert.equal(
      formatBaggage([
        { key: 'user', value: 'alice smith' },
        { key: 'k', value: 'a,b', metadata: 'p=1' },
      ]),
      'user=alice%20smith,k=a%2Cb;p=1',
    )
    assert.equal(formatBaggage([]), undefined)
  })

  it('drops a header over 8192 characters, as Python does', () => {
    assert.deepEqual(parseBaggage(`k=${'v'.repeat(8200)}`), [])
  })
})

describe('[trace headers] span names and attributes of the Python instrumentation', () => {
  it('apply_async/<task>: action, id, name, then the destination kind, exchange and routing key', () => {
    assert.equal(producerSpanName('proj.add'), 'apply_async/proj.add')
    assert.deepEqual(
      producerAttributes({ taskId: 'id-1', taskName: 'proj.add', exchange: '', routingKey: 'celery', exchangeType: 'direct' }),
      {
        'celery.action': 'apply_async',
        'messaging.message.id': 'id-1',
        'celery.task_name': 'proj.add',
        'messaging.destination_kind': 'queue',
        'messaging.destination': 'celery',
      },
    )
    assert.deepEqual(producerAttributes({ taskId: 'id-2', taskName: 't', exchange: 'ex', routingKey: 'a.b', exchangeType: 'topic' }), {
      'celery.action': 'apply_async',
      'messaging.message.id': 'id-2',
      'celery.task_name': 't',
      'messaging.destination_kind': 'topic',
      'celery.exchange': 'ex',
      'messaging.destination': 'a.b',
    })
  })

  it('run/<task>: action, state, the request (delivery_info as str() of its dict, origin as hostname), then the name', () => {
    assert.equal(consumerSpanName('proj.add'), 'run/proj.add')
    const attrs = consumerAttributes(
      {
        id: 'id-1',
        taskName: 'proj.add',
        hostname: 'w1@host',
        origin: 'gen42@client',
        correlationId: 'id-1',
        deliveryInfo: { exchange: '', routingKey: 'celery', priority: 0, redelivered: null },
        replyTo: 'reply-q',
        retries: 0,
      },
      'SUCCESS',
    )
    assert.deepEqual(attrs, {
      'celery.action': 'run',
      'celery.state': 'SUCCESS',
      'messaging.conversation_id': 'id-1',
      'messaging.destination': 'celery',
      'celery.delivery_info': "{'exchange': '', 'routing_key': 'celery', 'priority': 0, 'redelivered': None}",
      'celery.hostname': 'gen42@client',
      'messaging.message.id': 'id-1',
      'celery.reply_to': 'reply-q',
      'celery.task_name': 'proj.add',
    })
  })

  it('a retried run says its retries; without an origin the worker is the hostname', () => {
    const attrs = consumerAttributes({ id: 'x', taskName: 't', hostname: 'w1@host', retries: 2 }, 'RETRY')
    assert.equal(attrs['celery.retries'], 2)
    assert.equal(attrs['celery.hostname'], 'w1@host')
    assert.equal(attrs['celery.state'], 'RETRY')
  })
})

describe('[trace headers] queue wait', () => {
  it('is the time from the send, or from a later ETA, to the start; unknown without a sent time', () => {
    const sent = 1_700_000_000
    assert.equal(queueWaitSeconds(sent, null, sent * 1000 + 1500), 1.5)
    assert.equal(queueWaitSeconds(sent, new Date(sent * 1000 + 10_000).toISOString(), sent * 1000 + 10_250), 0.25)
    assert.equal(queueWaitSeconds(sent, null, sent * 1000 - 5), 0)
    assert.equal(queueWaitSeconds(undefined, null, 1), null)
    assert.equal(queueWaitSeconds('1700000000', null, 1), null)
  })
})
