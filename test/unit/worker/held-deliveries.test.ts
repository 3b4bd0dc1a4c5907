// The task runner and deliveries the broker takes back: one it took back (its channel
// closed) is never run from memory; a running task's redelivered copy takes
// that run's outcome; a second live copy of a held task is not run again;
// a far ETA is handed to the broker's delayed delivery, confirmed before the
// original is acked.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createApp } from '../../../src/app/app.js'
import { Logger } from '../../../src/process/logger.js'
import { encodeTaskV2 } from '../../../src/protocol/index.js'
import type { Delivery, OutgoingMessage, Transport } from '../../../src/transport/index.js'
import type { EventDispatcher } from '../../../src/worker/events.js'
import { LimitedSet } from '../../../src/worker/control/limited-set.js'
import { SoloPool } from '../../../src/worker/pools/solo-pool.js'
import { TaskRunner, type EtaDelayPolicy } from '../../../src/worker/task-path/task-runner.js'

class RecordingLogger extends Logger {
  readonly lines: string[] = []
  override log(level: Parameters<Logger['log']>[0], message: string): void {
    this.lines.push(`${level} ${message}`)
  }
}

type TestDelivery = Delivery & { acks: number; rejects: number; live: boolean }

function delivery(id: string, options: { eta?: string; redelivered?: boolean; args?: unknown[] } = {}): TestDelivery {
  const m = encodeTaskV2('proj.record', {
    id,
    args: options.args ?? [id],
    origin: 'gen@test',
    ...(options.eta ? { eta: options.eta } : {}),
  })
  const d: TestDelivery = {
    body: Buffer.from(m.body),
    properties: {
      contentType: m.contentType,
      contentEncoding: m.contentEncoding,
      headers: m.headers as Delivery['properties']['headers'],
      deliveryMode: 2,
      priority: 0,
    },
    exchange: '',
    routingKey: 'q',
    queue: 'q',
    redelivered: options.redelivered ?? false,
    deliveryTag: `${id}-${Math.random()}`,
    acks: 0,
    rejects: 0,
    live: true,
    ack: async () => {
      d.acks += 1
    },
    reject: async () => {
      d.rejects += 1
    },
    isLive: () => d.live,
  }
  return d
}

function setUp(options: { etaDelay?: EtaDelayPolicy; publishDelayed?: Transport['publishDelayed'] } = {}) {
  const app = createApp({ name: 'proj' })
  const ran: string[] = []
  let release: () => void = () => undefined
  let hold = false
  app.task('proj.record', async (x: string) => {
    ran.push(x)
    if (hold) await new Promise<void>((resolve) => (release = resolve))
    return x
  })
  const log = new RecordingLogger('DEBUG')
  const runner = new TaskRunner({
    app,
    transport: { publishDelayed: options.publishDelayed } as unknown as Transport,
    pool: new SoloPool(app, 1),
    backend: null,
    events: { taskEvents: false, sendTask: () => undefined } as unknown as EventDispatcher,
    revoked: new LimitedSet(),
    log,
    hostname: 'w@h',
    acksLate: true,
    timeLimit: null,
    softTimeLimit: null,
    onScheduledChange: () => undefined,
    etaDelay: options.etaDelay,
  })
  return { runner, ran, log, holdTasks: () => (hold = true), release: () => release() }
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))
const inSeconds = (s: number): string => new Date(Date.now() + s * 1000).toISOString()

describe('[task-runner] held deliveries and the broker taking them back', () => {
  it('drops held copies of a closed channel at once and never runs them', async () => {
    const { runner, ran, holdTasks, release } = setUp()
    holdTasks()
    const running = delivery('t1')
    const reserved = delivery('t2')
    const eta = delivery('t3', { eta: inSeconds(60) })
    void runner.onDelivery(running)
    void runner.onDelivery(reserved)
    void runner.onDelivery(eta)
    await turn()
    assert.deepEqual([runner.active.size, runner.reserved.length, runner.scheduled.size], [1, 1, 1])
    running.live = reserved.live = eta.live = false
    const dropped = runner.dropLost()
    assert.deepEqual(dropped.map((r) => r.id).sort(), ['t2', 't3'])
    assert.deepEqual([runner.reserved.length, runner.scheduled.size], [0, 0])
    release()
    await runner.idle()
    assert.deepEqual(ran, ['t1'], 'only the running task ran')
    assert.equal(reserved.acks + eta.acks, 0)
  })

  it("gives a running task's redelivered copy that run's outcome instead of running it again", async () => {
    const { runner, ran, holdTasks, release } = setUp()
    holdTasks()
    const first = delivery('t1')
    void runner.onDelivery(first)
    await turn()
    first.live = false
    const again = delivery('t1', { redelivered: true })
    await runner.onDelivery(again)
    release()
    await runner.idle()
    assert.deepEqual(ran, ['t1'])
    assert.equal(again.acks, 1, 'the new copy is acked with the first run')
  })

  it('settles the redelivered copy of a task that ended on a closed channel, without running it', async () => {
    const { runner, ran, holdTasks, release } = setUp()
    holdTasks()
    const first = delivery('t1')
    void runner.onDelivery(first)
    await turn()
    first.live = false
    release()
    await runner.idle()
    const again = delivery('t1', { redelivered: true })
    await runner.onDelivery(again)
    await runner.idle()
    assert.deepEqual(ran, ['t1'])
    assert.equal(again.acks, 1)
  })

  it('settles, without running, the redelivery of a task acked just before its channel was lost', async () => {
    const { runner, ran } = setUp()
    const first = delivery('t1')
    await runner.onDelivery(first)
    await runner.idle()
    assert.equal(first.acks, 1)
    // The ack left, but the broker closed the channel before it arrived.
    first.live = false
    runner.dropLost()
    const again = delivery('t1', { redelivered: true })
    await runner.onDelivery(again)
    await runner.idle()
    assert.deepEqual(ran, ['t1'])
    assert.equal(again.acks, 1)
  })

  it('settles a second live copy of a running task with that run, keeping one on a requeue', async () => {
    const { runner, ran, holdTasks, release } = setUp()
    holdTasks()
    const first = delivery('t1')
    void runner.onDelivery(first)
    await turn()
    const again = delivery('t1', { redelivered: true })
    await runner.onDelivery(again)
    release()
    await runner.idle()
    assert.deepEqual(ran, ['t1'])
    assert.deepEqual([first.acks, again.acks], [1, 1])
  })

  it('acks a second live copy of a task held for its ETA, and runs it once', async (t) => {
    // The ETA is waited for with setTimeout against Date.now(): mocked, it comes without waiting.
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: Date.now() })
    const { runner, ran } = setUp()
    const eta = inSeconds(0.2)
    const a = delivery('t1', { eta })
    const b = delivery('t1', { eta })
    await runner.onDelivery(a)
    await runner.onDelivery(b)
    assert.equal(b.acks, 1)
    assert.deepEqual(ran, [], 'held until its ETA')
    t.mock.timers.tick(400)
    await runner.idle()
    assert.deepEqual(ran, ['t1'])
    assert.equal(a.acks, 1)
  })

  it("hands a far ETA to the broker's delayed delivery (confirmed, then acked) and does not hold it", async () => {
    const published: Array<{ queue: string; delay: number; message: OutgoingMessage }> = []
    let confirmed = false
    const { runner, ran } = setUp({
      etaDelay: { enabled: true, afterSeconds: 10 },
      publishDelayed: async (queue, message, delay) => {
        published.push({ queue, delay, message })
        confirmed = true
      },
    })
    const far = delivery('t1', { eta: inSeconds(100) })
    far.ack = async () => {
      assert.ok(confirmed, 'acked only after the delayed copy was confirmed')
      far.acks += 1
    }
    await runner.onDelivery(far)
    await turn()
    assert.equal(published.length, 1)
    assert.equal(published[0]!.queue, 'q')
    assert.ok(published[0]!.delay >= 97 && published[0]!.delay <= 99, `delay ${published[0]!.delay}`)
    assert.deepEqual(published[0]!.message.body, far.body)
    assert.equal(far.acks, 1)
    assert.equal(runner.scheduled.size, 0)
    assert.deepEqual(ran, [])
  })

  it('holds a far ETA, with one warning, when the delayed delivery is off or fails', async () => {
    const { runner, log } = setUp({ etaDelay: { enabled: false, afterSeconds: 10 }, publishDelayed: async () => undefined })
    const far = delivery('t1', { eta: inSeconds(100) })
    await runner.onDelivery(far)
    assert.equal(runner.scheduled.size, 1)
    assert.equal(log.lines.filter((l) => l.startsWith('WARNING') && l.includes('consumer_timeout')).length, 1)
    const failing = setUp({
      etaDelay: { enabled: true, afterSeconds: 10 },
      publishDelayed: async () => Promise.reject(new Error('406 boom')),
    })
    const far2 = delivery('t2', { eta: inSeconds(100) })
    await failing.runner.onDelivery(far2)
    await turn()
    assert.equal(failing.runner.scheduled.size, 1, 'held here instead')
    assert.equal(far2.acks, 0)
    assert.ok(failing.log.lines.some((l) => l.includes('could not hand its ETA')))
    for (const r of [runner, failing.runner]) await r.releaseUnstarted()
  })
})
