// How the settings that notice a dead path are read: broker_heartbeat (0 and
// None off, the URL's ?heartbeat= winning), broker_heartbeat_checkrate, the
// Redis socket options and health check (their ioredis options and the PING's
// period and deadline), bad values refused with one line, and the worker's
// reconnect line as Celery words it.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { amqpConnectSettings } from '../../../src/transport/amqp/connection/connect-options.js'
import { healthCheckTimings, livenessClientOptions } from '../../../src/transport/redis/liveness.js'
import { checkTransportOptions, readLiveness } from '../../../src/config/transport-options.js'
import { transportSettingsFromConf } from '../../../src/config/config.js'
import { settingsRefusals } from '../../../src/config/settings.js'
import { backendLivenessFromConf } from '../../../src/backends/index.js'
import { retryStep } from '../../../src/worker/connection-guard.js'

describe('[broker_heartbeat] the AMQP heartbeat asked for', () => {
  const hb = (url: string, settings = {}) => amqpConnectSettings(url, settings).connect.heartbeat
  it("Celery's 120 s by default; the setting; 0 and None off; the URL's ?heartbeat= wins", () => {
    assert.equal(hb('amqp://h//'), 120)
    assert.equal(hb('amqp://h//', { heartbeat: 4 }), 4)
    assert.equal(hb('amqp://h//', { heartbeat: 0 }), 0)
    assert.equal(hb('amqp://h//', { heartbeat: null }), 0)
    assert.equal(hb('amqp://h//?heartbeat=10', { heartbeat: 4 }), 10)
  })
  it('from conf: broker_heartbeat and broker_heartbeat_checkrate reach the transport settings', () => {
    assert.deepEqual(
      (({ heartbeat, heartbeatCheckrate }) => ({ heartbeat, heartbeatCheckrate }))(
        transportSettingsFromConf({ broker_heartbeat: 0, broker_heartbeat_checkrate: 2 }),
      ),
      { heartbeat: 0, heartbeatCheckrate: 2 },
    )
    assert.equal(transportSettingsFromConf({ broker_heartbeat: null }).heartbeat, 0)
    assert.equal(amqpConnectSettings('amqp://h//').heartbeatCheckrate, 3)
  })
  it('0 and None start a worker; a bad value is refused with one line', () => {
    assert.deepEqual(settingsRefusals({ broker_heartbeat: 0 }, 'celery'), [])
    assert.deepEqual(settingsRefusals({ broker_heartbeat: null, broker_heartbeat_checkrate: 2 }, 'celery'), [])
    assert.deepEqual(settingsRefusals({ broker_heartbeat: '60' }, 'celery'), [
      'broker_heartbeat = "60": expected seconds >= 0 (0 or None: off)',
    ])
    assert.deepEqual(settingsRefusals({ broker_heartbeat_checkrate: 0 }, 'celery'), [
      'broker_heartbeat_checkrate = 0: expected a number > 0',
    ])
  })
})

describe('[health_check_interval, socket_timeout] Redis liveness', () => {
  it('broker_transport_options are read, bad ones refused', () => {
    const r = checkTransportOptions({ health_check_interval: 5, socket_timeout: 3, socket_connect_timeout: 2, socket_keepalive: false })
    assert.deepEqual(r.redisLiveness, { healthCheckInterval: 5, socketTimeout: 3, socketConnectTimeout: 2, socketKeepalive: false })
    assert.deepEqual(r.refusals, [])
    assert.deepEqual(checkTransportOptions({ socket_timeout: -1, health_check_interval: 'x' }).refusals, [
      'broker_transport_options.socket_timeout = -1: expected seconds > 0 (at most a day), or None',
      'broker_transport_options.health_check_interval = "x": expected seconds >= 0 (at most a day), or None',
    ])
  })
  it('the result backend reads redis_socket_* and redis_backend_health_check_interval', () => {
    assert.deepEqual(
      backendLivenessFromConf({ redis_socket_timeout: 3, redis_backend_health_check_interval: 0, redis_socket_keepalive: true }),
      { socketTimeout: 3, healthCheckInterval: 0, socketKeepalive: true },
    )
    assert.deepEqual(settingsRefusals({ redis_backend_health_check_interval: -2 }, 'celery'), [
      'redis_backend_health_check_interval = -2: expected seconds >= 0, or None',
    ])
    assert.deepEqual(settingsRefusals({ redis_socket_timeout: 'soon' }, 'celery'), [
      'redis_socket_timeout = "soon": expected seconds > 0, or None',
    ])
  })
  it('ioredis options: socket timeout (plus a blocking wait), keep-alive unless turned off', () => {
    assert.deepEqual(livenessClientOptions(undefined), { keepAlive: 0 })
    assert.deepEqual(livenessClientOptions({ socketTimeout: 3 }, 1), { socketTimeout: 4000, keepAlive: 0 })
    assert.deepEqual(livenessClientOptions({ socketKeepalive: false }), {})
  })
  it("the PING: kombu's 25 s by default, off at 0, its deadline the interval or a shorter socket_timeout", () => {
    assert.deepEqual(healthCheckTimings(undefined), { everyMs: 25_000, deadlineMs: 25_000 })
    assert.equal(healthCheckTimings({ healthCheckInterval: 0 }), null)
    assert.deepEqual(healthCheckTimings({ healthCheckInterval: 10, socketTimeout: 3 }), { everyMs: 10_000, deadlineMs: 3_000 })
    assert.deepEqual(
      readLiveness(
        { health_check_interval: null },
        { socket_timeout: 'a', socket_connect_timeout: 'b', socket_keepalive: 'c', health_check_interval: 'd' },
      ).liveness,
      { healthCheckInterval: 0 },
    )
  })
})

describe("[reconnect line] Celery's CONNECTION_RETRY_STEP", () => {
  it('the wait and the attempt number; the failover line when the next URL is tried at once', () => {
    assert.equal(retryStep({ attempt: 3, delayMs: 2000, failover: false }), 'Trying again in 2.00 seconds... (3)')
    assert.equal(retryStep({ attempt: 1, delayMs: 0, failover: true }), 'Will retry using next failover.')
  })
})

describe('[redis liveness] the stale socket_timeout timer of a closed ioredis socket', () => {
  it('is cleared on close, so a CLI whose connection was refused exits (ioredis keeps it in socketTimeoutTimer)', async () => {
    const { Redis } = await import('ioredis')
    const { watchLiveness } = await import('../../../src/transport/redis/liveness.js')
    const conn = new Redis({ lazyConnect: true, socketTimeout: 120_000 })
    const internals = conn as unknown as { socketTimeoutTimer?: NodeJS.Timeout }
    const stop = watchLiveness(conn, { healthCheckInterval: 0 }, 1000)
    // A newer ioredis that renames the field fails here rather than leaving a timer armed.
    internals.socketTimeoutTimer = setTimeout(() => assert.fail('the stale timer fired'), 60_000)
    conn.emit('close')
    assert.equal(internals.socketTimeoutTimer, undefined)
    stop()
    conn.disconnect()
    const source = (await import('node:fs')).readFileSync(new URL('../../../node_modules/ioredis/built/Redis.js', import.meta.url), 'utf8')
    assert.match(
      source,
      /this\.socketTimeoutTimer = setTimeout\(/,
      'ioredis no longer keeps its socket timeout in socketTimeoutTimer: check liveness.ts onClose',
    )
  })
})
