// The worker's memory habits: one full GC when the loop goes quiet after work
// that grew the heap (never while busy, never twice for one burst), V8's gc()
// reached without --expose-gc leaking a global, and an operator's own
// young-generation size left alone.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { runInNewContext } from 'node:vm'
import { fullGc, keepYoungGenerationSmall, trimMemoryWhenIdle } from '../../../src/worker/memory-footprint.js'

const MB = 1024 * 1024
const tick = () => new Promise((resolve) => setTimeout(resolve, 15))

/** A trimmer on a scripted event loop: each interval reads the next utilisation. */
function scripted(shares: number[], heap: { bytes: number }) {
  const collected: number[] = []
  let i = 0
  const stop = trimMemoryWhenIdle({
    intervalMs: 2,
    growthBytes: 8 * MB,
    utilization: () => shares[Math.min(i++, shares.length - 1)]!,
    heapBytes: () => heap.bytes,
    collect: () => {
      collected.push(heap.bytes)
      heap.bytes = 20 * MB
    },
  })
  return { collected, stop, done: () => i >= shares.length }
}

async function untilDone(run: { done: () => boolean; stop: () => void }): Promise<void> {
  while (!run.done()) await tick()
  run.stop()
}

it('[memory] collects once when the loop goes quiet after a burst that grew the heap', async () => {
  const heap = { bytes: 20 * MB }
  const run = scripted([0.9, 0.8, 0.9, 0, 0, 0, 0], heap)
  heap.bytes = 60 * MB
  await untilDone(run)
  assert.deepEqual(run.collected, [60 * MB])
})

it('[memory] leaves a heap alone that grew less than the threshold, and never collects while busy', async () => {
  const small = { bytes: 20 * MB }
  const quietAfterSmallBurst = scripted([0.9, 0, 0], small)
  small.bytes = 25 * MB
  await untilDone(quietAfterSmallBurst)
  assert.deepEqual(quietAfterSmallBurst.collected, [])

  const big = { bytes: 20 * MB }
  const alwaysBusy = scripted([0.9, 0.5, 0.2, 0.9, 0.06], big)
  big.bytes = 90 * MB
  await untilDone(alwaysBusy)
  assert.deepEqual(alwaysBusy.collected, [])
})

it('[memory] a half-busy interval is not quiet, and a quiet start (no burst yet) collects nothing', async () => {
  const heap = { bytes: 20 * MB }
  const run = scripted([0, 0, 0.9, 0.03, 0.03, 0.03], heap)
  heap.bytes = 60 * MB
  await untilDone(run)
  assert.deepEqual(run.collected, [])
})

it('[memory] a second burst after a collection is trimmed again', async () => {
  const heap = { bytes: 20 * MB }
  const shares = [0.9, 0, 0.9, 0.9, 0, 0]
  let i = 0
  const collected: number[] = []
  const stop = trimMemoryWhenIdle({
    intervalMs: 2,
    utilization: () => {
      const share = shares[Math.min(i++, shares.length - 1)]!
      if (share > 0.5) heap.bytes += 30 * MB
      return share
    },
    heapBytes: () => heap.bytes,
    collect: () => {
      collected.push(heap.bytes)
      heap.bytes = 20 * MB
    },
  })
  while (i < shares.length) await tick()
  stop()
  assert.deepEqual(collected, [50 * MB, 80 * MB])
})

it('[memory] V8 gc() is reached without --expose-gc, and no context gets a global gc', () => {
  const gc = fullGc()
  assert.equal(typeof gc, 'function')
  gc!()
  assert.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined')
  assert.equal(runInNewContext('typeof gc'), 'undefined')
})

it('[memory] an operator-chosen young generation (node option or NODE_OPTIONS) is left alone', () => {
  assert.equal(keepYoungGenerationSmall(['--max-semi-space-size=16'], ''), false)
  assert.equal(keepYoungGenerationSmall([], '--enable-source-maps --semi-space-growth-factor=4'), false)
  assert.equal(keepYoungGenerationSmall(['--min-semi-space-size', '8'], ''), false)
})
