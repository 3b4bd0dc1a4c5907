// The AMQP heartbeat check as py-amqp's heartbeat_tick runs it, on mocked
// timers: any byte received counts; none for two heartbeats ends the
// connection with "Too many heartbeats missed"; checked every heartbeat / rate.
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { it, mock } from 'node:test'
import type { ChannelModel } from 'amqplib'
import { watchHeartbeats } from '../../../src/transport/amqp/connection/heartbeat.js'

function fakeConnection(heartbeat: number) {
  const stream = {
    bytesRead: 0,
    destroyed: false,
    destroy() {
      this.destroyed = true
    },
  }
  const errors: Error[] = []
  const model = Object.assign(new EventEmitter(), { connection: { heartbeat, stream, onSocketError: (e: Error) => errors.push(e) } })
  return { conn: model as unknown as ChannelModel, stream, errors, model }
}

it('[heartbeat 4, rate 2] bytes keep it alive; two heartbeats of silence end it, noticed at the next check', () => {
  mock.timers.enable({ apis: ['setInterval'] })
  let now = 0
  try {
    const { conn, stream, errors } = fakeConnection(4)
    watchHeartbeats(conn, 2, () => now)
    for (let i = 0; i < 10; i += 1) {
      now += 2000
      stream.bytesRead += 8
      mock.timers.tick(2000)
    }
    assert.equal(errors.length, 0, 'alive while bytes arrive')
    // Silence from here: 8 s is not yet past two heartbeats, the check after it is.
    for (let i = 0; i < 4; i += 1) {
      now += 2000
      mock.timers.tick(2000)
    }
    assert.equal(errors.length, 0, 'exactly two heartbeats of silence is still allowed')
    now += 2000
    mock.timers.tick(2000)
    assert.equal(errors.length, 1)
    assert.match(errors[0]!.message, /^Too many heartbeats missed \(nothing received for 10 s, heartbeat 4 s\)/)
    assert.equal(stream.destroyed, true, 'the dead socket is not waited on')
    now += 20_000
    mock.timers.tick(20_000)
    assert.equal(errors.length, 1, 'said once')
  } finally {
    mock.timers.reset()
  }
})

it('[heartbeat 0] no check at all; a closed connection stops its check', () => {
  mock.timers.enable({ apis: ['setInterval'] })
  let now = 0
  try {
    const off = fakeConnection(0)
    watchHeartbeats(off.conn, 3, () => now)
    const on = fakeConnection(1)
    watchHeartbeats(on.conn, 3, () => now)
    on.model.emit('close')
    now += 60_000
    mock.timers.tick(60_000)
    assert.equal(off.errors.length + on.errors.length, 0)
  } finally {
    mock.timers.reset()
  }
})
