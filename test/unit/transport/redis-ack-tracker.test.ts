// The Redis transport's share of kombu's ack emulation (QoS._delivered): which
// deliveries count against a consumer's window, what a settle writes, and what
// close({requeueUnacked}) puts back, against a recording stand-in for the
// unacked store. The window and the restore order are what the worker's
// prefetch and the no-loss tests rest on.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { AckTracker } from '../../../src/transport/redis/consume/ack-tracker.js'
import { ConsumerSet, ListConsumer } from '../../../src/transport/redis/consume/list-consumers.js'
import { makeDelivery, type HeldDelivery } from '../../../src/transport/redis/consume/deliveries.js'
import { parseEnvelope } from '../../../src/transport/kombu-envelope.js'
import type { UnackedStore } from '../../../src/transport/redis/consume/unacked.js'

class FakeStore {
  readonly calls: string[] = []
  failRemove = false
  failAdd = false
  /** Restores wait for this before they answer, so a test can settle something meanwhile. */
  gate: Promise<void> = Promise.resolve()

  async add(tag: string): Promise<void> {
    this.calls.push(`add ${tag}`)
    if (this.failAdd) throw new Error('add refused')
  }

  remove(tag: string): Promise<void> {
    this.calls.push(`remove ${tag}`)
    return this.failRemove ? Promise.reject(new Error('remove refused')) : Promise.resolve()
  }

  async defer(tag: string, until: number): Promise<void> {
    this.calls.push(`defer ${tag} ${until}`)
  }

  /** Every tag asked about is gone from unacked_index, as after another worker's visibility pass. */
  async scores(tags: readonly string[]): Promise<Array<number | null>> {
    return tags.map(() => null)
  }

  async restore(tag: string, { leftmost }: { leftmost: boolean }): Promise<boolean> {
    this.calls.push(`restore ${tag}${leftmost ? ' leftmost' : ''}`)
    await this.gate
    return true
  }
}

function setUp() {
  const store = new FakeStore()
  let settled = 0
  const tracker = new AckTracker(store as unknown as UnackedStore, {
    assertOpen: () => undefined,
    settled: () => {
      settled += 1
    },
    classify: (error, where) => new Error(`${where}: ${(error as Error).message}`),
  })
  const consumer = new ListConsumer('q', 'ctag', () => undefined, 8, false, { cancel: async () => undefined, changed: () => undefined })
  const deliver = (tag: string): HeldDelivery => {
    const tracked = tracker.track(consumer, tag, `{"raw": "${tag}"}`, '', 'q', true)
    assert.ok(!(tracked instanceof Promise), 'a claimed (already recorded) delivery is tracked without a promise')
    return tracked
  }
  return { store, tracker, consumer, deliver, settledCount: () => settled }
}

describe('AckTracker', () => {
  it('a claimed delivery counts against the window at once; its ack frees the slot, removes it once, and a second ack does nothing', async () => {
    const { store, consumer, deliver, settledCount } = setUp()
    const a = deliver('a')
    deliver('b')
    assert.equal(consumer.inFlight, 2)
    assert.equal(consumer.room(), 6)
    const acking = a.ack()
    // The slot frees when the ack is made, before Redis answers.
    assert.equal(consumer.inFlight, 1)
    await acking
    await a.ack()
    assert.deepEqual(store.calls, ['remove a'])
    assert.equal(settledCount(), 1)
  })

  it('a delivery not yet recorded is written to unacked first; a refused write frees its slot and says what failed', async () => {
    const { store, tracker, consumer } = setUp()
    const tracking = tracker.track(consumer, 'p', '{}', '', 'q', false)
    assert.ok(tracking instanceof Promise)
    assert.equal(consumer.inFlight, 1)
    await tracking
    assert.deepEqual(store.calls, ['add p'])
    store.failAdd = true
    await assert.rejects(tracker.track(consumer, 'r', '{}', '', 'q', false) as Promise<HeldDelivery>, /record unacked r: add refused/)
    assert.equal(consumer.inFlight, 1)
  })

  it('an ack Redis refuses holds the delivery again (its slot and its place in a close), and the same ack can be retried', async () => {
    const { store, tracker, consumer, deliver } = setUp()
    const a = deliver('a')
    store.failRemove = true
    await assert.rejects(a.ack(), /ack a: remove refused/)
    assert.equal(consumer.inFlight, 1)
    store.failRemove = false
    await a.ack()
    assert.equal(consumer.inFlight, 0)
    await tracker.restoreAll()
    assert.deepEqual(store.calls, ['remove a', 'remove a'])
  })

  it('reject(requeue) restores to the back of the queue; reject without requeue is an ack', async () => {
    const { store, deliver } = setUp()
    await deliver('a').reject(true)
    await deliver('b').reject(false)
    assert.deepEqual(store.calls, ['restore a leftmost', 'remove b'])
  })

  it('close with requeue restores what is held in delivery order, whatever was settled in between, and skips one settled meanwhile', async () => {
    const { store, tracker, consumer, deliver } = setUp()
    const held = ['t0', 't1', 't2', 't3', 't4', 't5'].map(deliver)
    // Settled out of order: the records left behind move within the tracker.
    await held[1]!.ack()
    await held[4]!.ack()
    await held[0]!.ack()
    store.calls.length = 0
    let open!: () => void
    store.gate = new Promise((resolve) => {
      open = resolve
    })
    const closing = tracker.restoreAll()
    // t2 is being restored; t5 is acked before its turn comes.
    await held[5]!.ack()
    open()
    await closing
    assert.deepEqual(store.calls, ['restore t2', 'remove t5', 'restore t3'])
    // Restored ones keep their slot until settled, as before the close.
    assert.equal(consumer.inFlight, 2)
    store.calls.length = 0
    await tracker.restoreAll()
    assert.deepEqual(store.calls, [], 'nothing is restored twice')
  })

  it('a delivery settled after another took its place leaves, and only what is still held is restored', async () => {
    const { store, tracker, consumer, deliver } = setUp()
    const [a, b, c] = ['a', 'b', 'c'].map(deliver)
    await a!.ack()
    await c!.ack()
    assert.equal(consumer.inFlight, 1)
    await tracker.restoreAll()
    assert.deepEqual(store.calls, ['remove a', 'remove c', 'restore b'])
    await b!.ack()
    assert.equal(consumer.inFlight, 0)
  })

  it('the Delivery made from a tracked delivery defers its visibility, and turns not live once a visibility pass restored it; its ack then writes nothing', async () => {
    const { store, tracker, consumer, deliver } = setUp()
    const tracked = deliver('a')
    const envelope = parseEnvelope(
      '{"body": "", "headers": {}, "properties": {"delivery_tag": "a", "delivery_info": {"exchange": "", "routing_key": "q"}, "body_encoding": "base64"}}',
    )
    const delivery = makeDelivery(envelope, 'q', tracked)
    assert.equal(delivery.isLive?.(), true)
    await delivery.deferVisibility!(1000)
    assert.deepEqual(store.calls, ['defer a 1000'])
    // Deferred to 1970: old enough for any visibility timeout, and gone from the index.
    assert.deepEqual(await tracker.findLost(60), [{ queue: 'q' }])
    assert.equal(delivery.isLive?.(), false)
    await delivery.ack()
    await delivery.ack()
    assert.deepEqual(store.calls, ['defer a 1000'], 'a restored copy is not ours to ack')
    assert.equal(consumer.inFlight, 0)
  })

  it('forget drops every record; a delivery settled after it still frees its slot and writes its ack', async () => {
    const { store, tracker, consumer, deliver } = setUp()
    const a = deliver('a')
    deliver('b')
    tracker.forget()
    await a.ack()
    assert.equal(consumer.inFlight, 1)
    const c = deliver('c')
    await tracker.restoreAll()
    assert.deepEqual(store.calls, ['remove a', 'restore c'])
    await c.ack()
    assert.equal(consumer.inFlight, 1)
  })
})

describe('ConsumerSet: which consumer a popped message goes to', () => {
  const hooks = { cancel: async () => undefined, changed: () => undefined }

  it('one consumer takes every message while it has room, and none once it is full', () => {
    const set = new ConsumerSet()
    const only = new ListConsumer('q', 'c1', () => undefined, 2, false, hooks)
    set.add(only)
    assert.equal(set.pick('q'), only)
    only.inFlight = 2
    assert.equal(set.pick('q'), undefined)
    assert.equal(set.pick('other'), undefined)
  })

  it('consumers of one queue take turns, skipping a full one; round_robin moves a served queue to the end', () => {
    const set = new ConsumerSet()
    const [a, b] = ['c1', 'c2'].map((tag) => new ListConsumer('q', tag, () => undefined, 1, false, hooks))
    set.add(a!)
    set.add(b!)
    set.add(new ListConsumer('r', 'c3', () => undefined, 1, false, hooks))
    assert.deepEqual([set.pick('q'), set.pick('q'), set.pick('q')], [a, b, a])
    a!.inFlight = 1
    assert.deepEqual([set.pick('q'), set.pick('q')], [b, b])
    assert.deepEqual(set.ready(), ['q', 'r'])
    set.rotate('q')
    assert.deepEqual(set.ready(), ['r', 'q'])
    set.rotate('q')
    assert.deepEqual(set.ready(), ['r', 'q'])
  })
})
