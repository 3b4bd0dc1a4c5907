// Celery's broker_transport_options.visibility_timeout reaches the Redis
// transport from the app's conf; the broker URL's own query wins over it, and
// kombu's 3600 s is the default. Nothing here connects.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { createApp } from '../../../src/app/app.js'
import { createTransport } from '../../../src/transport/index.js'
import { resolveRedisOptions } from '../../../src/transport/redis/options.js'

it("[redis options] visibility timeout: an explicit option, then the URL query, then the app's default, then 3600", () => {
  assert.equal(resolveRedisOptions('redis://127.0.0.1:6379/0').visibilityTimeout, 3600)
  assert.equal(resolveRedisOptions('redis://127.0.0.1:6379/0', { defaultVisibilityTimeout: 120 }).visibilityTimeout, 120)
  assert.equal(
    resolveRedisOptions('redis://127.0.0.1:6379/0?visibility_timeout=30', { defaultVisibilityTimeout: 120 }).visibilityTimeout,
    30,
  )
  assert.equal(
    resolveRedisOptions('redis://127.0.0.1:6379/0?visibility_timeout=30', { visibilityTimeout: 5, defaultVisibilityTimeout: 120 })
      .visibilityTimeout,
    5,
  )
})

it("[redis options] the app's broker_transport_options reach the transport it creates", async () => {
  const app = createApp({ name: 'proj', conf: { broker_transport_options: { visibility_timeout: 120 } } })
  assert.deepEqual(app.transportSettings, { visibilityTimeout: 120 })
  assert.deepEqual(createApp({ name: 'proj', conf: { broker_transport_options: { visibility_timeout: 'soon' } } }).transportSettings, {})
  const transport = await createTransport('redis://127.0.0.1:6379/0', app.transportSettings)
  try {
    assert.equal((transport as unknown as { options: { visibilityTimeout: number } }).options.visibilityTimeout, 120)
  } finally {
    await transport.close()
  }
})
