// task_publish_retry / task_publish_retry_policy as Celery hands them to
// kombu's Connection.ensure: which policy a conf gives, kombu's fxrange
// intervals, and which failures are tried again. The retried function here is
// a plain function that throws the transport's error classes; the real broker
// drop is in test/integration/app/publish-retry.test.ts.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DEFAULT_PUBLISH_RETRY_POLICY, publishRetryPolicy, retryInterval, withPublishRetry } from '../../../src/config/publish-retry.js'
import { refusals } from '../../../src/config/settings.js'
import { BrokerConnectionError, BrokerRequestError } from '../../../src/transport/index.js'

describe('[task_publish_retry, task_publish_retry_policy]', () => {
  it("Celery's default policy; off with task_publish_retry = False; a conf policy with kombu ensure()'s defaults for what it leaves out", () => {
    assert.deepEqual(publishRetryPolicy({}), DEFAULT_PUBLISH_RETRY_POLICY)
    assert.deepEqual(DEFAULT_PUBLISH_RETRY_POLICY, { maxRetries: 3, intervalStart: 0, intervalStep: 0.2, intervalMax: 1 })
    assert.equal(publishRetryPolicy({ task_publish_retry: false }), null)
    assert.deepEqual(publishRetryPolicy({ task_publish_retry_policy: { max_retries: 5 } }), {
      maxRetries: 5,
      intervalStart: 1,
      intervalStep: 1,
      intervalMax: 1,
    })
    assert.deepEqual(publishRetryPolicy({ task_publish_retry_policy: { max_retries: null, interval_start: 2 } }), {
      maxRetries: null,
      intervalStart: 2,
      intervalStep: 1,
      intervalMax: 1,
    })
  })

  it("kombu's fxrange(start, start + max, step, repeatlast=True)", () => {
    assert.deepEqual(
      [0, 1, 2, 3, 4, 5, 6].map((n) => retryInterval(DEFAULT_PUBLISH_RETRY_POLICY, n)),
      [0, 0.2, 0.4, 0.6000000000000001, 0.8, 1, 1],
    )
    assert.deepEqual(
      [0, 1, 2].map((n) => retryInterval({ maxRetries: 3, intervalStart: 2, intervalStep: 2, intervalMax: 3 }, n)),
      [2, 4, 4],
    )
  })

  it('a lost connection is tried again max_retries times, then its error stands; a refused request never', async () => {
    const fast = { maxRetries: 2, intervalStart: 0, intervalStep: 0, intervalMax: 0 }
    let calls = 0
    const failing = async (): Promise<string> => {
      calls += 1
      throw new BrokerConnectionError('connection lost')
    }
    await assert.rejects(withPublishRetry(fast, failing), /connection lost/)
    assert.equal(calls, 3)
    calls = 0
    await assert.rejects(withPublishRetry(null, failing), /connection lost/)
    assert.equal(calls, 1)
    calls = 0
    const refused = async (): Promise<string> => {
      calls += 1
      throw new BrokerRequestError('PRECONDITION_FAILED', 'inequivalent arg')
    }
    await assert.rejects(withPublishRetry(fast, refused), /inequivalent/)
    assert.equal(calls, 1)
    let left = 2
    const heals = async (): Promise<string> => {
      if (left-- > 0) throw new BrokerConnectionError('down')
      return 'sent'
    }
    const retried: number[] = []
    assert.equal(await withPublishRetry(fast, heals, (_e, n) => retried.push(n)), 'sent')
    assert.deepEqual(retried, [0, 1])
  })

  it('a policy tsq cannot read is refused with one line', () => {
    assert.deepEqual(refusals({ task_publish_retry_policy: { max_retries: 3, interval_begin: 1 } }), [
      'task_publish_retry_policy = {"max_retries":3,"interval_begin":1}: interval_begin is not one of max_retries, interval_start, interval_step, interval_max',
    ])
    assert.deepEqual(refusals({ task_publish_retry_policy: { max_retries: -1 } }), [
      'task_publish_retry_policy = {"max_retries":-1}: max_retries must be a number >= 0 or None',
    ])
    assert.deepEqual(
      refusals({
        task_publish_retry: false,
        task_publish_retry_policy: { max_retries: null, interval_max: 5 },
        task_send_sent_event: true,
        task_inherit_parent_priority: true,
        broker_read_url: 'redis://a',
        broker_write_url: 'redis://b',
      }),
      [],
    )
  })
})
