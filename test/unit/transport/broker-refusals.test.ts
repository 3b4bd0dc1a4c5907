// How broker refusals are named: Redis's OOM under maxmemory (alone, or
// inside the EXECABORT of a MULTI whose commands it refused as they were
// queued) reads "Redis is out of memory (maxmemory)", and a RabbitMQ
// basic.nack is a refusal (the broker does not have the message), not a lost
// connection. A batch send's outcomes rest on that difference.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { classifyAmqpError } from '../../../src/transport/amqp/classify-error.js'
import { classifyRedisError, isOutOfMemoryError } from '../../../src/transport/redis/classify-error.js'
import { BrokerConnectionError, BrokerRequestError } from '../../../src/transport/index.js'

const OOM = "OOM command not allowed when used memory > 'maxmemory'."

/** ioredis's shape for a refused MULTI: EXECABORT, the queued refusals in previousErrors. */
function execAbort(...previous: Error[]): Error {
  return Object.assign(new Error('EXECABORT Transaction discarded because of previous errors.'), { previousErrors: previous })
}

describe('broker refusals', () => {
  it('an OOM reply says Redis is out of memory, as a request error coded OOM', () => {
    const e = classifyRedisError(new Error(OOM), 'publish to celery', 'redis://127.0.0.1:6379/0')
    assert.ok(e instanceof BrokerRequestError)
    assert.equal(e.code, 'OOM')
    assert.equal(e.message, `redis broker redis://127.0.0.1:6379/0: publish to celery: Redis is out of memory (maxmemory): ${OOM}`)
  })

  it('an EXECABORT caused by an OOM says OOM too; one caused by something else keeps its words', () => {
    const e = classifyRedisError(execAbort(new Error(OOM)), 'declare queue w@h.celery.pidbox', 'redis://h/0')
    assert.equal(e.code, 'OOM')
    assert.match(
      e.message,
      /^redis broker redis:\/\/h\/0: declare queue w@h\.celery\.pidbox: Redis is out of memory \(maxmemory\): OOM command not allowed/,
    )
    assert.equal(isOutOfMemoryError(execAbort(new Error('WRONGTYPE Operation against a key holding the wrong kind of value'))), false)
    assert.equal(classifyRedisError(execAbort(), 'x', 'redis://h/0').code, 'EXECABORT')
  })

  it('a basic.nack is the broker refusing the message; a dropped connection stays a connection error', () => {
    const nacked = classifyAmqpError(new Error('message nacked'), "publish to exchange '' key 'celery'")
    assert.ok(nacked instanceof BrokerRequestError)
    assert.equal(nacked.message, "publish to exchange '' key 'celery': the broker refused the message (basic.nack)")
    assert.ok(classifyAmqpError(new Error('Connection closed: 320 (CONNECTION-FORCED)'), 'publish') instanceof BrokerConnectionError)
  })
})
