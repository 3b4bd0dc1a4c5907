// Gossip's reading of worker-* events, as celery.events.state and
// celery/worker/consumer/gossip.py read them: peers join on online or
// heartbeat, leave on offline, and are reported once when their heartbeats stop
// for freq × 2; every event's clock pushes ours ahead.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { Logger } from '../../../src/process/logger.js'
import { LamportClock, type Transport } from '../../../src/transport/index.js'
import { Gossip } from '../../../src/worker/control/gossip.js'

class RecordingLogger extends Logger {
  readonly lines: string[] = []
  override log(level: Parameters<Logger['log']>[0], message: string): void {
    this.lines.push(`${level} ${message}`)
  }
}

function gossip(now: { t: number }) {
  const log = new RecordingLogger('DEBUG')
  const clock = new LamportClock()
  const g = new Gossip(undefined as unknown as Transport, 'me@host', clock, log, () => now.t)
  return { g, log, clock }
}

const heartbeat = (hostname: string, fields: Record<string, unknown> = {}) => ({
  type: 'worker-heartbeat',
  hostname,
  clock: 1,
  freq: 2,
  timestamp: 1000,
  ...fields,
})

it('[gossip] a peer that stops sending heartbeats is reported once after freq x 2, then forgotten', () => {
  const now = { t: 1000 }
  const { g, log } = gossip(now)
  g.receive(heartbeat('w2@host'))
  assert.deepEqual(g.alivePeers(), ['w2@host'])
  assert.deepEqual(log.lines, ['DEBUG w2@host joined the party'])
  now.t = 1003.9
  g.checkPeers()
  assert.deepEqual(log.lines.slice(1), [], 'still within 2 x freq (4 s)')
  now.t = 1004
  g.checkPeers()
  assert.deepEqual(log.lines.slice(1), ['INFO missed heartbeat from w2@host'])
  assert.deepEqual(g.alivePeers(), [])
  g.checkPeers()
  assert.equal(log.lines.length, 2, 'reported once')
})

it('[gossip] heartbeats keep a peer alive; offline makes it leave without a missed-heartbeat report', () => {
  const now = { t: 1000 }
  const { g, log } = gossip(now)
  g.receive(heartbeat('w2@host', { type: 'worker-online' }))
  for (let t = 1002; t <= 1010; t += 2) {
    now.t = t
    g.receive(heartbeat('w2@host', { timestamp: t }))
    g.checkPeers()
  }
  assert.deepEqual(log.lines, ['DEBUG w2@host joined the party'])
  g.receive({ type: 'worker-offline', hostname: 'w2@host', clock: 9, freq: 2, timestamp: 1010 })
  now.t = 2000
  g.checkPeers()
  assert.deepEqual(log.lines.slice(1), ['DEBUG w2@host left'])
})

it('[gossip] every event moves the clock past its own; our own events only forward it; task events and batches are not followed', () => {
  const { g, clock } = gossip({ t: 1000 })
  g.receive(heartbeat('w2@host', { clock: 41 }))
  assert.equal(clock.value, 42)
  g.receive(heartbeat('me@host', { clock: 7 }))
  assert.equal(clock.value, 44, 'adjusted (no change, +1) then forwarded (+1)')
  g.receive({ type: 'task-succeeded', hostname: 'w2@host', clock: 500 })
  assert.equal(clock.value, 44)
  assert.deepEqual(g.alivePeers(), ['w2@host'])
})

it('[gossip] a peer more than 16 s off is warned about once, as Celery does', () => {
  const now = { t: 1000 }
  const { g, log } = gossip(now)
  g.receive(heartbeat('w3@host', { timestamp: 1020 }))
  g.receive(heartbeat('w3@host', { timestamp: 1021 }))
  g.receive(heartbeat('w4@host', { timestamp: 1010 }))
  const warnings = log.lines.filter((l) => l.startsWith('WARNING'))
  assert.equal(warnings.length, 1)
  assert.match(
    warnings[0]!,
    /^WARNING Substantial drift from w3@host may mean clocks are out of sync\. {2}Current drift is 20 seconds\. {2}\[orig: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.000000 recv: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.000000\]$/,
  )
})
