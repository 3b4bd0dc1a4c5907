// The amqp:// lock store's heartbeat per lease: RabbitMQ gives a silent peer up
// between one and two heartbeat timeouts, so half the lease (rounded up) frees
// a paused holder's lock within about the lease; the URL's own heartbeat caps it.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { lockHeartbeatS } from '../../../src/locks/amqp-store.js'

it('half the lease, rounded up, at least 1 s, at most the URL heartbeat', () => {
  assert.equal(lockHeartbeatS(3000, 60), 2)
  assert.equal(lockHeartbeatS(600_000, 60), 60)
  assert.equal(lockHeartbeatS(600_000, 0), 300)
  assert.equal(lockHeartbeatS(500, 60), 1)
  assert.equal(lockHeartbeatS(10_000, 4), 4)
})
