// Deduplication's rules on a fake clock: every scenario BullMQ is compared
// with (test/helpers/dedup-scenarios.ts) played against the store's rules with
// a worker that takes each task at its due time, claims a delayed one and
// frees a simple-mode id when it ends; then the rules one by one (replace,
// extend, keep-ttl, a redelivered receipt, release by another task), the
// options' checks, and the header a Python client sets.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DocumentDedupStore, memoryDocument } from '../../../src/locks/dedup/document-store.js'
import { readDedupHeader, receiptRequestOf } from '../../../src/locks/dedup/header.js'
import { dedupRequestOf, emptyDocument, offer, claim, release, listing, type DedupRequest } from '../../../src/locks/dedup/rules.js'
import { DEDUP_SCENARIOS, type DedupScenario } from '../../helpers/dedup-scenarios.js'

/** Plays a scenario: sends at their times, each standing task run at its due time for runMs. */
async function play(s: DedupScenario): Promise<string[]> {
  const store = new DocumentDedupStore('memory', memoryDocument())
  const base = dedupRequestOf('t', { id: 'k', ...s.dedup }, [], {})
  type Ev = { at: number; seq: number; run: () => Promise<void> }
  const events: Ev[] = []
  let seq = 0
  const at = (time: number, run: () => Promise<void>) => events.push({ at: time, seq: seq++, run })
  const ran: string[] = []
  const delayMs = s.countdown !== undefined ? s.countdown * 1000 : s.dedup.mode === 'debounce' ? base.ttlMs! : 0
  for (const send of s.sends)
    at(send.at, async () => {
      const now = send.at
      const etaMs = delayMs > 0 ? now + delayMs : 0
      const answer = await store.offer({ ...base, taskId: send.label, etaMs }, now)
      if (!answer.stands) return
      at(Math.max(now, etaMs), async () => {
        const start = Math.max(now, etaMs)
        if (etaMs > 0 && !(await store.claim(base.key, send.label, start)).go) return
        ran.push(send.label)
        at(start + s.runMs, async () => {
          if (base.mode === 'simple') await store.release(base.key, send.label)
        })
      })
    })
  while (events.length > 0) {
    events.sort((a, b) => a.at - b.at || a.seq - b.seq)
    await events.shift()!.run()
  }
  return ran
}

describe('the scenarios BullMQ is compared with, on a fake clock', () => {
  for (const s of DEDUP_SCENARIOS) it(s.name, async () => assert.deepEqual(await play(s), s.runs))
})

const req = (over: Partial<DedupRequest> = {}): DedupRequest => ({
  key: 't:k',
  taskId: 'a',
  mode: 'simple',
  ttlMs: null,
  extend: false,
  replace: false,
  etaMs: 0,
  ...over,
})

describe('the rules', () => {
  it('simple: stands until released by its own task; another task cannot release it', () => {
    const doc = emptyDocument()
    assert.deepEqual(offer(doc, req(), 0), { stands: true, replaced: null })
    assert.deepEqual(offer(doc, req({ taskId: 'b' }), 1_000_000), { stands: false, taskId: 'a', leftMs: null })
    assert.equal(release(doc, 't:k', 'b'), false)
    assert.equal(release(doc, 't:k', 'a'), true)
    assert.deepEqual(offer(doc, req({ taskId: 'c' }), 1_000_001), { stands: true, replaced: null })
  })

  it('the same task offered again (a redelivered receipt) still stands', () => {
    const doc = emptyDocument()
    offer(doc, req({ ttlMs: 100 }), 0)
    assert.deepEqual(offer(doc, req({ ttlMs: 100 }), 50), { stands: true, replaced: null })
  })

  it('throttle: gives the time left; extend starts it again; it runs out', () => {
    const doc = emptyDocument()
    offer(doc, req({ mode: 'throttle', ttlMs: 1000 }), 0)
    assert.deepEqual(offer(doc, req({ taskId: 'b', mode: 'throttle', ttlMs: 1000 }), 400), { stands: false, taskId: 'a', leftMs: 600 })
    assert.deepEqual(offer(doc, req({ taskId: 'b', mode: 'throttle', ttlMs: 1000, extend: true }), 900), {
      stands: false,
      taskId: 'a',
      leftMs: 1000,
    })
    assert.deepEqual(offer(doc, req({ taskId: 'c', mode: 'throttle', ttlMs: 1000 }), 1899).stands, false)
    assert.deepEqual(offer(doc, req({ taskId: 'c', mode: 'throttle', ttlMs: 1000 }), 1900), { stands: true, replaced: null })
  })

  it('replace: a delayed task is replaced and dropped at its ETA; the id keeps its time left unless extend', () => {
    const doc = emptyDocument()
    const d = (taskId: string, now: number, extend = false) =>
      offer(doc, req({ taskId, mode: 'debounce', ttlMs: 1000, replace: true, extend, etaMs: now + 1000 }), now)
    d('a', 0)
    assert.deepEqual(d('b', 300), { stands: true, replaced: 'a' })
    assert.equal(listing(doc, 300)[0]!.leftMs, 700)
    assert.deepEqual(d('c', 600, true), { stands: true, replaced: 'b' })
    assert.equal(listing(doc, 600)[0]!.leftMs, 1000)
    assert.deepEqual(claim(doc, 't:k', 'a', 1000), { go: false, by: 'b' })
    assert.deepEqual(claim(doc, 't:k', 'b', 1300), { go: false, by: 'c' })
    assert.deepEqual(claim(doc, 't:k', 'c', 1500), { go: true })
    assert.equal(listing(doc, 1500)[0]!.started, true)
    // Taken up: a later send is deduplicated, not replacing it.
    assert.deepEqual(offer(doc, req({ taskId: 'e', mode: 'debounce', ttlMs: 1000, replace: true, etaMs: 2500 }), 1500).stands, false)
  })

  it('replace finds a standing task already due (its ETA passed, unclaimed) and does not take it back', () => {
    const doc = emptyDocument()
    offer(doc, req({ mode: 'debounce', ttlMs: 5000, replace: true, etaMs: 1000 }), 0)
    assert.deepEqual(offer(doc, req({ taskId: 'b', mode: 'debounce', ttlMs: 5000, replace: true, etaMs: 2100 }), 1100), {
      stands: false,
      taskId: 'a',
      leftMs: 3900,
    })
  })
})

describe('options and the header', () => {
  it('modes as BullMQ derives them; ids scoped by task; a function id gets the arguments', () => {
    assert.equal(dedupRequestOf('t', { id: 'x' }, [], {}).mode, 'simple')
    assert.equal(dedupRequestOf('t', { id: 'x', ttl: 1 }, [], {}).mode, 'throttle')
    const debounce = dedupRequestOf('t', { id: (n: number) => `n${n}`, ttl: 2, replace: true }, [7], {})
    assert.deepEqual([debounce.mode, debounce.key, debounce.ttlMs, debounce.replace], ['debounce', 't:n7', 2000, true])
    assert.equal(dedupRequestOf('t', { id: 'x', mode: 'debounce', ttl: 1 }, [], {}).replace, true)
    assert.throws(() => dedupRequestOf('t', { id: 'x', mode: 'throttle' }, [], {}), /needs a ttl/)
    assert.throws(() => dedupRequestOf('t', { id: '' }, [], {}), /non-empty/)
    assert.throws(() => dedupRequestOf('t', { id: 'x', ttl: -1 }, [], {}), /above 0/)
  })

  it("reads a Python client's header (a dict, or JSON) and refuses a bad one with the reason", () => {
    const h = readDedupHeader({ id: 'u1', ttl: 2, mode: 'debounce' })
    assert.ok(h && typeof h === 'object')
    assert.deepEqual(receiptRequestOf('proj.t', h, 'tid', 5), {
      key: 'proj.t:u1',
      taskId: 'tid',
      mode: 'debounce',
      ttlMs: 2000,
      extend: false,
      replace: true,
      etaMs: 5,
    })
    assert.equal(h.at, null)
    assert.deepEqual(readDedupHeader('{"id": 3}'), { id: '3', mode: 'simple', ttl: null, extend: false, replace: false, at: null })
    assert.equal(readDedupHeader(undefined), null)
    assert.match(String(readDedupHeader({ id: 'x', mode: 'throttle' })), /needs a ttl/)
    assert.match(String(readDedupHeader({ id: 'x', mode: 'often' })), /mode must be/)
    assert.match(String(readDedupHeader('not json')), /not JSON/)
  })
})
