// Beat's Redis store and lease over a path that goes silent (a TCP proxy
// switched to "blackhole"): with broker_transport_options' health_check_interval
// and socket_timeout the dead connection is given up and new ones are tried
// while the path is dead; once it heals the lease is renewed on the new one.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { brokerSkipReason, REDIS_URL, uniqueName, waitFor } from '../../helpers/brokers.js'
import { BlackholeProxy } from '../../helpers/blackhole-proxy.js'
import { RedisStore } from '../../../src/beat/redis-store.js'
import { RedisLease } from '../../../src/beat/lease.js'

const skip = await brokerSkipReason('redis')
const cleanup: Array<() => Promise<void>> = []
after(async () => {
  for (const c of cleanup.reverse()) await c()
})

describe("beat's Redis lease over a blackholed path", { skip }, () => {
  it('[health_check_interval 1, socket_timeout 1] the dead connection is noticed and replaced; the lease is renewed after heal', async () => {
    const u = new URL(REDIS_URL)
    const proxy = await BlackholeProxy.start({ host: u.hostname, port: Number(u.port) })
    cleanup.push(() => proxy.close())
    const prefix = uniqueName('tsq-deadpath-beat')
    const store = await RedisStore.open({
      url: proxy.urlFor(REDIS_URL),
      liveness: { healthCheckInterval: 1, socketTimeout: 1 },
      keyPrefix: prefix,
      tz: 'UTC',
    })
    cleanup.push(async () => {
      await store.redis.del(`${prefix}:lock`, `${prefix}:lock:fence`)
      await store.close()
    })
    const lease = new RedisLease(store.redis, `${prefix}:lock`, 60_000)
    assert.equal(await lease.refresh(), 'acquired')
    const acceptedBefore = proxy.accepted
    proxy.blackhole()
    // Nothing is sent by beat meanwhile: only the health check can notice, and a new connection is then tried.
    await waitFor(() => proxy.accepted > acceptedBefore, {
      timeoutMs: 30_000,
      intervalMs: 100,
      what: 'a reconnect attempt while blackholed',
    })
    assert.notEqual(store.redis.status, 'ready')
    proxy.heal()
    await waitFor(() => store.redis.status === 'ready', { timeoutMs: 30_000, intervalMs: 100, what: 'the store connected again' })
    assert.equal(await lease.refresh(), null, 'renewed: still ours')
    assert.ok(lease.held, 'the lease is held')
  })
})
