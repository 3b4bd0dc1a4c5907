import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadConfig } from '../../../src/config/config.js'
import { maskUrl } from '../../../src/transport/url.js'

describe('broker and backend precedence: flag > TSQ_* > CELERY_* > app > embedded', () => {
  it('flag wins', () => {
    const c = loadConfig({ broker: 'redis://a' }, { TSQ_BROKER_URL: 'redis://b', CELERY_BROKER_URL: 'redis://c' })
    assert.equal(c.brokerUrl, 'redis://a')
    assert.equal(c.brokerSource, 'flag')
  })
  it('TSQ_ then CELERY_ env', () => {
    assert.equal(loadConfig({}, { TSQ_BROKER_URL: 'redis://b', CELERY_BROKER_URL: 'redis://c' }).brokerUrl, 'redis://b')
    assert.equal(loadConfig({}, { CELERY_BROKER_URL: 'redis://c' }).brokerUrl, 'redis://c')
  })
  it("the app module's own option comes below env", () => {
    assert.equal(loadConfig({ appBroker: 'redis://app' }, {}).brokerUrl, 'redis://app')
    assert.equal(loadConfig({ appBroker: 'redis://app' }, { CELERY_BROKER_URL: 'redis://c' }).brokerUrl, 'redis://c')
  })
  it('embedded default, with the embedded result store', () => {
    const c = loadConfig({}, { TSQ_HOME: '/tmp/x' })
    assert.equal(c.brokerUrl, 'file:///tmp/x/broker')
    assert.equal(c.resultBackend, 'file:///tmp/x/broker')
  })
  it('beat timezone: --timezone > TSQ_TIMEZONE > UTC', () => {
    assert.equal(loadConfig({ timezone: 'Asia/Tokyo' }, { TSQ_TIMEZONE: 'Europe/Berlin' }).timezone, 'Asia/Tokyo')
    assert.equal(loadConfig({}, { TSQ_TIMEZONE: 'Europe/Berlin' }).timezone, 'Europe/Berlin')
    assert.equal(loadConfig({}, {}).timezone, 'UTC')
  })
  it('result backend precedence', () => {
    assert.equal(
      loadConfig({ broker: 'redis://a' }, { TSQ_RESULT_BACKEND: 'redis://r1', CELERY_RESULT_BACKEND: 'redis://r2' }).resultBackend,
      'redis://r1',
    )
    assert.equal(loadConfig({ broker: 'redis://a' }, { CELERY_RESULT_BACKEND: 'redis://r2' }).resultBackend, 'redis://r2')
    assert.equal(loadConfig({ broker: 'redis://a' }, {}).resultBackend, undefined)
  })
  it("[broker_read_url, broker_write_url] CELERY_BROKER_READ_URL / _WRITE_URL > conf > the broker, even a flag's (Celery's Settings properties)", () => {
    const plain = loadConfig({ broker: 'redis://a' }, {})
    assert.deepEqual([plain.brokerReadUrl, plain.brokerWriteUrl], ['redis://a', 'redis://a'])
    const conf = loadConfig({ broker: 'redis://a', appBrokerRead: 'redis://r', appBrokerWrite: 'redis://w' }, {})
    assert.deepEqual([conf.brokerUrl, conf.brokerReadUrl, conf.brokerWriteUrl], ['redis://a', 'redis://r', 'redis://w'])
    const env = loadConfig(
      { broker: 'redis://a', appBrokerRead: 'redis://r', appBrokerWrite: 'redis://w' },
      { CELERY_BROKER_READ_URL: 'redis://er', CELERY_BROKER_WRITE_URL: 'redis://ew' },
    )
    assert.deepEqual([env.brokerReadUrl, env.brokerWriteUrl], ['redis://er', 'redis://ew'])
    assert.equal(loadConfig({ appBroker: 'redis://app', appBrokerWrite: 'redis://w' }, {}).brokerReadUrl, 'redis://app')
  })
})

describe('passwords are masked as kombu as_uri does', () => {
  it('masks', () => {
    assert.equal(maskUrl('amqp://guest:guest@host//'), 'amqp://guest:**@host//')
    assert.equal(maskUrl('redis://:secret@127.0.0.1:6379/0'), 'redis://:**@127.0.0.1:6379/0')
    assert.equal(maskUrl('redis://127.0.0.1:6379/0'), 'redis://127.0.0.1:6379/0')
  })
})
