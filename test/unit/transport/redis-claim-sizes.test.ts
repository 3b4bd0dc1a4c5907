// The claim loop's sizes at a given prefetch window: one claim for the whole
// window, or (the solo pool's worker, a CPU free) two claims of half of it on
// the wire at once; never more asked than the window has room for.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Redis } from 'ioredis'
import { BrpopLoop, type BrpopTarget } from '../../../src/transport/redis/consume/brpop-loop.js'
import type { BusyPoll } from '../../../src/transport/redis/tricks/busy-poll.js'
import { ClaimOverlap } from '../../../src/transport/redis/tricks/claim-overlap.js'
import { RedisKeys } from '../../../src/transport/redis/keys.js'
import type { ClaimedMessage } from '../../../src/transport/redis/consume/unacked.js'

/** Enough of an ioredis connection for a loop that only claims. */
const fakeConn = () => ({ status: 'ready', on() {}, off() {}, client: async () => 1, disconnect() {} }) as unknown as Redis

/** The sizes of the claims the loop sends before any is answered, at `window`. */
async function firstClaims(window: number, overlap: ClaimOverlap | undefined, poll?: BusyPoll, splitClaims = true): Promise<number[]> {
  const asked: number[] = []
  const answers: Array<(m: ClaimedMessage[]) => void> = []
  const target: BrpopTarget = {
    readyQueues: () => ['q'],
    deliver: () => undefined,
    idle: () => undefined,
    failed: () => undefined,
    wantsClaim: () => true,
    claimRoom: () => ({ room: window, window }),
    claim: (_keys, _queues, max) => {
      asked.push(max)
      return new Promise((resolve) => answers.push(resolve))
    },
    deliverClaimed: () => undefined,
    claimStaged: async () => null,
    stagingFor: (source) => `${source}.staging`,
    openBlocker: async () => fakeConn(),
  }
  const loop = new BrpopLoop(fakeConn(), fakeConn(), target, new RedisKeys(0), overlap, poll, splitClaims)
  loop.start()
  await new Promise((r) => setImmediate(r))
  const sent = [...asked]
  const stopped = loop.stop()
  // Empty answers: the lists are drained, and the loop ends.
  for (const answer of answers) answer([])
  await stopped
  return sent
}

/** A ClaimOverlap whose run-delay counter never moves: a free CPU. */
const freeCpu = () =>
  new ClaimOverlap(
    () => 0,
    () => 0,
  )
/** One that cannot read the counter (not Linux). */
const unknownCpu = () =>
  new ClaimOverlap(
    () => undefined,
    () => 0,
  )

describe('Redis claim sizes', () => {
  it('window 8, whole: one claim of 8', async () => {
    assert.deepEqual(await firstClaims(8, undefined), [8])
  })

  it('window 8, split while a CPU is free: two claims of 4', async () => {
    assert.deepEqual(await firstClaims(8, freeCpu()), [4, 4])
  })

  it('window 8 where the run delay cannot be read: one claim of 8', async () => {
    assert.deepEqual(await firstClaims(8, unknownCpu()), [8])
  })

  it('window 5, split: 3 and the 2 left, never more than the window', async () => {
    assert.deepEqual(await firstClaims(5, freeCpu()), [3, 2])
  })

  it('window 1 is not split', async () => {
    assert.deepEqual(await firstClaims(1, freeCpu()), [1])
  })

  it('keeps the loop polling for each claim only while a CPU is free', async () => {
    const spy = () => {
      const seen = { sent: 0, stopped: false }
      const poll = { sent: () => void (seen.sent += 1), stop: () => void (seen.stopped = true) } as unknown as BusyPoll
      return { poll, seen }
    }
    const free = spy()
    await firstClaims(8, freeCpu(), free.poll)
    assert.deepEqual(free.seen, { sent: 2, stopped: true })
    const unknown = spy()
    await firstClaims(8, unknownCpu(), unknown.poll)
    assert.equal(unknown.seen.sent, 0)
    // A window too large to split still polls while the CPU is free.
    const large = spy()
    await firstClaims(200, freeCpu(), large.poll)
    assert.equal(large.seen.sent, 4)
  })

  it('TSQ_NO_CLAIM_OVERLAP (splitClaims false): window 8 goes whole while a CPU is free, and busy polling still asks that CPU reading', async () => {
    const seen = { sent: 0 }
    const poll = { sent: () => void (seen.sent += 1), stop: () => undefined } as unknown as BusyPoll
    assert.deepEqual(await firstClaims(8, freeCpu(), poll, false), [8])
    assert.equal(seen.sent, 1)
  })

  it('window 200 keeps its claims of 32, four on the wire, split or not', async () => {
    assert.deepEqual(await firstClaims(200, freeCpu()), [32, 32, 32, 32])
    assert.deepEqual(await firstClaims(200, undefined), [32, 32, 32, 32])
  })
})
