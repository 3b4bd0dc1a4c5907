// sentinel:// as kombu's SentinelChannel and Celery's SentinelBackend read it:
// a `;` list of Sentinels, the master's password and db from the first URL,
// master_name and sentinel_kwargs from the transport options. Nothing here
// connects.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { createApp } from '../../../src/app/app.js'
import { backendSentinelFromConf } from '../../../src/config/config.js'
import { settingsRefusals } from '../../../src/config/settings.js'
import { checkBackendTransportOptions, checkTransportOptions } from '../../../src/config/transport-options.js'
import { createResultBackend } from '../../../src/backends/index.js'
import { BadBrokerUrlError, createTransport, maskUrl, parseBrokerUrl } from '../../../src/transport/index.js'
import { redisClientOptions, resolveRedisOptions } from '../../../src/transport/redis/options.js'
import {
  explainSentinelFailure,
  isDemotedMasterError,
  parseSentinelUrl,
  retryWhileDemoted,
  sentinelSettingsFrom,
} from '../../../src/transport/redis/sentinel.js'

const LIST = 'sentinel://:s3cret@10.0.0.1:26379/2;sentinel://:s3cret@10.0.0.2:26380/2;sentinel://10.0.0.3'

it("[sentinel://] a `;` list: every Sentinel, the master's password and db from the first URL, 26379 by default", () => {
  const target = parseSentinelUrl(LIST, { masterName: 'mymaster', sentinelPassword: 'sp' })
  assert.deepEqual(target.sentinels, [
    { host: '10.0.0.1', port: 26379 },
    { host: '10.0.0.2', port: 26380 },
    { host: '10.0.0.3', port: 26379 },
  ])
  assert.equal(target.masterName, 'mymaster')
  assert.equal(target.db, 2)
  assert.equal(target.password, 's3cret')
  assert.equal(target.sentinelPassword, 'sp')
})

it('[sentinel://] without master_name: one line naming the setting', () => {
  assert.throws(
    () => parseSentinelUrl(LIST, {}),
    (e: Error) =>
      e instanceof BadBrokerUrlError &&
      /broker_transport_options\.master_name/.test(e.message) &&
      !e.message.includes('s3cret') &&
      !e.message.includes('\n'),
  )
  assert.throws(
    () => parseSentinelUrl(LIST, undefined, 'result_backend_transport_options'),
    /result_backend_transport_options\.master_name/,
  )
  assert.throws(
    () => parseSentinelUrl('sentinel://h:1;redis://h:2', { masterName: 'm' }),
    /every URL of a Sentinel list must be sentinel:\/\//,
  )
  assert.throws(() => parseSentinelUrl('sentinel://h:1/x', { masterName: 'm' }), /database must be a number/)
})

it('[sentinel://] passwords are masked in every URL of the list', () => {
  assert.equal(maskUrl(LIST), 'sentinel://:**@10.0.0.1:26379/2;sentinel://:**@10.0.0.2:26380/2;sentinel://10.0.0.3')
  assert.equal(parseBrokerUrl(LIST).scheme, 'sentinel')
  assert.equal(parseBrokerUrl(LIST).hostname, '10.0.0.1')
  assert.equal(resolveRedisOptions(LIST, { sentinel: { masterName: 'm' } }).displayUrl, maskUrl(LIST))
})

it('[sentinel://] ioredis is given the Sentinels, the master name, its credentials and the failover detector', () => {
  const options = redisClientOptions(
    resolveRedisOptions(LIST, { sentinel: { masterName: 'mymaster', sentinelUsername: 'su', sentinelPassword: 'sp' } }),
  ) as unknown as Record<string, unknown>
  assert.equal(options.name, 'mymaster')
  assert.equal(options.db, 2)
  assert.equal(options.password, 's3cret')
  assert.equal(options.sentinelPassword, 'sp')
  assert.equal(options.sentinelUsername, 'su')
  assert.equal(options.failoverDetector, true)
  assert.equal(options.role, 'master')
  const reconnect = options.reconnectOnError as (e: Error) => unknown
  assert.equal(reconnect(new Error("READONLY You can't write against a read only replica.")), 1)
  assert.equal(reconnect(new Error('WRONGTYPE Operation against a key holding the wrong kind of value')), false)
  assert.throws(() => resolveRedisOptions(LIST, { sentinel: { masterName: 'm' }, ssl: true }), /TLS .* not supported with sentinel/)
})

it('[sentinel://] master_name and sentinel_kwargs from the transport options; others refused with one line each', () => {
  assert.deepEqual(
    sentinelSettingsFrom({ master_name: 'm', sentinel_kwargs: { password: 'p', socket_timeout: 1 } }, 'broker_transport_options'),
    { settings: { masterName: 'm', sentinelPassword: 'p' }, refusals: [] },
  )
  const bad = sentinelSettingsFrom({ master_name: 3, sentinel_kwargs: { ssl: true }, min_other_sentinels: 1 }, 'broker_transport_options')
  assert.equal(bad.refusals.length, 3)
  assert.deepEqual(checkTransportOptions({ master_name: 'm', sentinel_kwargs: { password: 'p' }, visibility_timeout: 10 }), {
    visibilityTimeout: 10,
    redisLayout: {},
    redisLiveness: {},
    refusals: [],
  })
  assert.deepEqual(checkBackendTransportOptions({ master_name: 'm' }), [])
  assert.match(checkBackendTransportOptions({ master_name: 'm', retry_policy: {} })[0]!, /result_backend_transport_options\.retry_policy/)
  assert.deepEqual(backendSentinelFromConf({ result_backend_transport_options: { master_name: 'rm' } }), { masterName: 'rm' })
  assert.deepEqual(
    settingsRefusals({ broker_transport_options: { master_name: 'm' }, result_backend_transport_options: { master_name: 'm' } }, 'celery'),
    [],
  )
})

it("[sentinel://] the app's conf reaches the broker transport and the result backend", async () => {
  const app = createApp({
    name: 'proj',
    conf: { broker_transport_options: { master_name: 'bm' }, result_backend_transport_options: { master_name: 'rm' } },
  })
  assert.deepEqual(app.transportSettings.sentinel, { masterName: 'bm' })
  const transport = await createTransport(LIST, app.transportSettings)
  try {
    assert.equal((transport as unknown as { options: { sentinel: { masterName: string } } }).options.sentinel.masterName, 'bm')
    assert.equal(transport.displayUrl, maskUrl(LIST))
  } finally {
    await transport.close()
  }
  const backend = await createResultBackend(LIST, { sentinel: app.backendSentinel })
  try {
    assert.equal(backend.displayUrl, maskUrl(LIST))
  } finally {
    await backend.close()
  }
  await assert.rejects(createResultBackend(LIST), /result_backend_transport_options\.master_name/)
})

it("[sentinel failover] a demoted master's refusals are retried; other errors are not", async () => {
  assert.ok(isDemotedMasterError(new Error('NOREPLICAS Not enough good replicas to write.')))
  assert.ok(isDemotedMasterError(new Error('UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)')))
  assert.ok(
    isDemotedMasterError(
      Object.assign(new Error('EXECABORT Transaction discarded because of previous errors.'), {
        previousErrors: [new Error("READONLY You can't write against a read only replica.")],
      }),
    ),
  )
  assert.ok(!isDemotedMasterError(new Error('EXECABORT Transaction discarded because of previous errors.')))
  let calls = 0
  assert.equal(
    await retryWhileDemoted(async () =>
      ++calls < 3 ? Promise.reject(new Error("READONLY You can't write against a read only replica.")) : 'ok',
    ),
    'ok',
  )
  assert.equal(calls, 3)
  calls = 0
  await assert.rejects(
    retryWhileDemoted(async () => {
      calls++
      throw new Error('WRONGTYPE no')
    }),
    /WRONGTYPE/,
  )
  assert.equal(calls, 1)
})

it('[sentinel://] a master name no Sentinel knows reads as such', () => {
  const target = { sentinels: [{ host: '127.0.0.1', port: 26379 }], masterName: 'nope' }
  assert.match(
    explainSentinelFailure(
      new Error('All sentinels are unreachable and retry is disabled. Last error: ERR No such master with that name'),
      target,
      undefined,
    ),
    /no Sentinel at 127\.0\.0\.1:26379 knows a master named 'nope'/,
  )
  assert.match(
    explainSentinelFailure(
      new Error('x'),
      target,
      new Error('connected to sentinel 127.0.0.1:26379 successfully, but got an invalid reply: null'),
    ),
    /knows a master named 'nope'/,
  )
  assert.equal(explainSentinelFailure(new Error('connect ECONNREFUSED'), target, undefined), 'connect ECONNREFUSED')
})
