// What a worker does with a task whose rate limit is the cluster's, by the
// bucket's answer (a scripted store, a fake clock): a slot now runs it; a slot
// ahead (within the horizon) is held till then and listed as reserved; a
// refusal is asked again after its wait, or, when the wait is long, deferred
// to the parking lot and acked here; one take per task at a time, in arrival
// order; `control rate_limit` goes to the store; shutdown hands back what waits.
import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it, mock } from 'node:test'
import { createApp, type App } from '../../../src/app/app.js'
import type { BucketAnswer, RateStore, StoredRate, TakeOptions } from '../../../src/locks/index.js'
import { Logger } from '../../../src/process/logger.js'
import type { Delivery, OutgoingMessage, Parking, Transport } from '../../../src/transport/index.js'
import { LimitedSet } from '../../../src/worker/control/limited-set.js'
import type { EventDispatcher } from '../../../src/worker/events.js'
import { SoloPool } from '../../../src/worker/pools/solo-pool.js'
import { DEFER_LOT } from '../../../src/worker/task-path/cluster/defer.js'
import { TaskRunner } from '../../../src/worker/task-path/task-runner.js'
import { taskDeliveryFields } from '../../helpers/deliveries.js'

const MS = 1000

class ScriptedStore implements RateStore {
  readonly takes: string[] = []
  readonly options: TakeOptions[] = []
  readonly rates: Array<[string, StoredRate | null]> = []
  private inFlight = 0
  maxInFlight = 0
  constructor(private readonly answers: BucketAnswer[]) {}
  async take(bucket: string, _intervalUs: number, options: TakeOptions = {}): Promise<BucketAnswer> {
    this.takes.push(bucket)
    this.options.push(options)
    this.inFlight += 1
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight)
    await Promise.resolve()
    this.inFlight -= 1
    return this.answers.shift() ?? { kind: 'now', waitUs: 0, slotUs: 0 }
  }
  async setRate(bucket: string, rate: StoredRate | null): Promise<void> {
    this.rates.push([bucket, rate])
  }
  async rateOf(): Promise<StoredRate | null> {
    return null
  }
  async close(): Promise<void> {}
}

interface Parked {
  lot: string
  queue: string
  message: OutgoingMessage
  at: number
}

function fakeTransport(parked: Parked[]): Transport {
  const parking = {
    park: async (lot: string, target: { queue: string }, message: OutgoingMessage, at: number) => {
      parked.push({ lot, queue: target.queue, message, at })
    },
    releaseDue: async () => ({ moved: 0, nextAt: null }),
  } as unknown as Parking
  return { kind: 'redis', parking } as unknown as Transport
}

function delivery() {
  const settled: string[] = []
  const d: Delivery & { settled: string[] } = {
    ...taskDeliveryFields('api.call', [1]),
    settled,
    ack: async () => void settled.push('ack'),
    reject: async ({ requeue }: { requeue: boolean }) => void settled.push(requeue ? 'requeue' : 'reject'),
  }
  return d
}

function setUp(answers: BucketAnswer[], withParking = true) {
  const app: App = createApp({ name: 'api' })
  const runs: number[] = []
  app.task('api.call', (n: number) => void runs.push(n), { rateLimit: '10/s', rateLimitScope: 'cluster' })
  const store = new ScriptedStore(answers)
  const parked: Parked[] = []
  const runner = new TaskRunner({
    app,
    transport: withParking ? fakeTransport(parked) : (undefined as never),
    pool: new SoloPool(app, 1),
    backend: null,
    events: { taskEvents: false, sendTask: () => undefined } as unknown as EventDispatcher,
    revoked: new LimitedSet(),
    log: new Logger('CRITICAL'),
    hostname: 'w@h',
    acksLate: true,
    timeLimit: null,
    softTimeLimit: null,
    onScheduledChange: () => undefined,
    rateStore: store,
  })
  return { runner, store, parked, runs }
}

/** Lets the promises in flight settle (the store's answers, the pool's run, the acks). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i += 1) await new Promise((resolve) => setImmediate(resolve))
}

describe('a cluster-wide rate limit, the worker side', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_700_000_000_000 }))
  afterEach(() => mock.timers.reset())

  it('a slot now: the task runs', async () => {
    const { runner, runs, store } = setUp([{ kind: 'now', waitUs: 0, slotUs: 0 }])
    const d = delivery()
    await runner.onDelivery(d)
    await settle()
    assert.deepEqual(store.takes, ['api.call'])
    assert.deepEqual(runs, [1])
    assert.deepEqual(d.settled, ['ack'])
  })

  it('a slot 300 ms ahead: held here (nothing deferred), listed as reserved, run at it', async () => {
    const { runner, runs, parked } = setUp([{ kind: 'reserved', waitUs: 300 * MS, slotUs: 0 }])
    const d = delivery()
    await runner.onDelivery(d)
    await settle()
    assert.deepEqual(runs, [])
    assert.deepEqual(d.settled, [])
    assert.equal(runner.reserved.length, 1, 'listed as reserved while it waits')
    mock.timers.tick(299)
    await settle()
    assert.deepEqual(runs, [])
    mock.timers.tick(1)
    await settle()
    assert.deepEqual(runs, [1])
    assert.deepEqual(d.settled, ['ack'])
    assert.equal(parked.length, 0)
  })

  it('refused: asked again after its wait; the next message waits in line behind it', async () => {
    const { runner, runs, store } = setUp([
      { kind: 'refused', waitUs: 40 * MS, slotUs: 0 },
      { kind: 'now', waitUs: 0, slotUs: 0 },
      { kind: 'now', waitUs: 0, slotUs: 0 },
    ])
    await runner.onDelivery(delivery())
    await runner.onDelivery(delivery())
    await settle()
    assert.equal(store.takes.length, 1, 'one take at a time per task')
    assert.deepEqual(runs, [])
    mock.timers.tick(45)
    await settle()
    assert.equal(store.takes.length, 3)
    assert.equal(store.maxInFlight, 1)
    assert.deepEqual(runs, [1, 1])
  })

  it('booked to come back later: deferred to the parking lot for the wait, acked here, the next one taken', async () => {
    const { runner, parked, runs, store } = setUp([
      { kind: 'deferred', waitUs: 5000 * MS, slotUs: 0 },
      { kind: 'now', waitUs: 0, slotUs: 0 },
    ])
    const d = delivery()
    const next = delivery()
    await runner.onDelivery(d)
    await runner.onDelivery(next)
    await settle()
    assert.equal(parked.length, 1)
    assert.equal(parked[0]!.lot, DEFER_LOT)
    assert.equal(parked[0]!.queue, 'celery')
    assert.equal(parked[0]!.at, Date.now() + 5000)
    assert.deepEqual(parked[0]!.message.body, d.body)
    assert.deepEqual(d.settled, ['ack'])
    assert.equal(store.takes.length, 2)
    assert.deepEqual(store.options[0], { deferAfterMs: 2000 }, 'a broker that can hold a message: long refusals are booked')
    assert.deepEqual(runs, [1], 'the next one ran')
    assert.deepEqual(next.settled, ['ack'])
  })

  it('refused for long without a broker that can hold it: held and asked again', async () => {
    const { runner, runs, store } = setUp(
      [
        { kind: 'refused', waitUs: 5000 * MS, slotUs: 0 },
        { kind: 'now', waitUs: 0, slotUs: 0 },
      ],
      false,
    )
    await runner.onDelivery(delivery())
    await settle()
    assert.deepEqual(store.options[0], {}, 'nothing booked where nothing can be deferred')
    assert.deepEqual(runs, [])
    mock.timers.tick(5003) // the wait, and the jitter of up to 2 ms on asking again
    await settle()
    assert.deepEqual(runs, [1])
  })

  it('control rate_limit stores the rate for the cluster', async () => {
    const { runner, store } = setUp([])
    await runner.setRateLimit('api.call', '20/s')
    await runner.setRateLimit('api.call', 0)
    assert.deepEqual(store.rates, [
      ['api.call', { text: '20/s', intervalUs: 50_000 }],
      ['api.call', { text: '0', intervalUs: 0 }],
    ])
  })

  it('shutdown hands back what waits for a slot', async () => {
    const { runner, runs } = setUp([{ kind: 'refused', waitUs: 100 * MS, slotUs: 0 }])
    const d = delivery()
    await runner.onDelivery(d)
    await settle()
    assert.equal(await runner.releaseUnstarted(), 1)
    await settle()
    mock.timers.tick(200)
    await settle()
    assert.deepEqual(runs, [])
    assert.deepEqual(d.settled, ['requeue'])
  })
})
