// The worker's memory habits: one compacting GC at the first quiet moment
// after start-up, then one when the loop goes quiet after work that grew the
// heap (never while busy, never twice for one burst); the collection compacts
// the old generation; V8's gc() reached without --expose-gc leaking a global,
// from threads starting together too; an operator's own young-generation
// size left alone; and the threads pool's isolates kept to a small one.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { it } from 'node:test'
import { getHeapSpaceStatistics } from 'node:v8'
import { fileURLToPath } from 'node:url'
import { runInNewContext } from 'node:vm'
import { Worker } from 'node:worker_threads'
import { readFileSync } from 'node:fs'
import {
  compactingGc,
  fullGc,
  keepYoungGenerationSmall,
  releaseNativeMemory,
  trimMemoryWhenIdle,
  youngGenerationExecArgv,
} from '../../../src/worker/memory-footprint.js'

const MB = 1024 * 1024
const tick = () => new Promise((resolve) => setTimeout(resolve, 15))

/**
 * A trimmer on a scripted event loop: each interval reads the next
 * utilisation; `onShare` runs before each (to grow the heap mid-script).
 */
function scripted(shares: number[], heap: { bytes: number }, onShare: (share: number) => void = () => undefined, settleIntervals = 1) {
  const collected: number[] = []
  const released: number[] = []
  let i = 0
  const stop = trimMemoryWhenIdle({
    intervalMs: 2,
    settleMs: 2 * settleIntervals,
    growthBytes: 8 * MB,
    utilization: () => {
      const share = shares[Math.min(i++, shares.length - 1)]!
      onShare(share)
      return share
    },
    heapBytes: () => heap.bytes,
    collect: () => {
      collected.push(heap.bytes)
      heap.bytes = 20 * MB
    },
    release: () => released.push(collected.length),
  })
  return { collected, released, stop, done: () => i >= shares.length }
}

async function untilDone(run: { done: () => boolean; stop: () => void }): Promise<void> {
  while (!run.done()) await tick()
  run.stop()
}

it('[memory] the first quiet moment after start-up collects once, whatever the heap; a quiet loop then collects nothing', async () => {
  const heap = { bytes: 12 * MB }
  const run = scripted([0.9, 0.3, 0, 0, 0, 0.03, 0, 0], heap)
  await untilDone(run)
  assert.deepEqual(run.collected, [12 * MB])
  assert.deepEqual(run.released, [1], "malloc's free pages are handed back after each collection")

  const quietFromTheStart = scripted([0, 0, 0, 0], { bytes: 9 * MB })
  await untilDone(quietFromTheStart)
  assert.deepEqual(quietFromTheStart.collected, [9 * MB])
})

it('[memory] collects once when the loop goes quiet after a burst that grew the heap', async () => {
  const heap = { bytes: 20 * MB }
  // Start-up's collection, then a burst that grows the heap to 60 MB.
  const run = scripted([0, 0.9, 0.8, 0.9, 0, 0, 0, 0], heap, (share) => {
    if (share > 0.5) heap.bytes = 60 * MB
  })
  await untilDone(run)
  assert.deepEqual(run.collected, [20 * MB, 60 * MB])
})

it('[memory] leaves a heap alone that grew less than the threshold, and never collects while busy', async () => {
  const small = { bytes: 20 * MB }
  const quietAfterSmallBurst = scripted([0, 0.9, 0, 0], small, (share) => {
    if (share > 0.5) small.bytes = 25 * MB
  })
  await untilDone(quietAfterSmallBurst)
  assert.deepEqual(quietAfterSmallBurst.collected, [20 * MB])

  const big = { bytes: 20 * MB }
  const alwaysBusy = scripted([0.9, 0.5, 0.2, 0.9, 0.06], big, () => (big.bytes += 30 * MB))
  await untilDone(alwaysBusy)
  assert.deepEqual(alwaysBusy.collected, [])
})

it('[memory] a half-busy interval is not quiet', async () => {
  const heap = { bytes: 20 * MB }
  const run = scripted([0, 0.9, 0.03, 0.03, 0.03], heap, (share) => {
    if (share > 0.5) heap.bytes = 60 * MB
  })
  await untilDone(run)
  assert.deepEqual(run.collected, [20 * MB])
})

it('[memory] a second burst after a collection is trimmed again', async () => {
  const heap = { bytes: 20 * MB }
  const run = scripted([0, 0.9, 0, 0.9, 0.9, 0, 0], heap, (share) => {
    if (share > 0.5) heap.bytes += 30 * MB
  })
  await untilDone(run)
  assert.deepEqual(run.collected, [20 * MB, 50 * MB, 80 * MB])
})

it('[memory] after a burst the loop must stay quiet for the settle time; start-up needs one quiet interval', async () => {
  const heap = { bytes: 20 * MB }
  const grow = (share: number) => {
    if (share > 0.5) heap.bytes += 30 * MB
  }
  // Start-up collects at once; the pause after the first burst is two quiet intervals, too short;
  // the one after the second is three, with a half-busy one among them, which settles.
  const run = scripted([0, 0.9, 0, 0, 0.9, 0, 0.03, 0, 0], heap, grow, 3)
  await untilDone(run)
  assert.deepEqual(run.collected, [20 * MB, 80 * MB])
})

it('[memory] the collection compacts the old generation: pages left with few survivors are given back', () => {
  const collect = compactingGc()
  assert.equal(typeof collect, 'function')
  const gc = fullGc()!
  const oldSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!.physical_space_size
  let all: { a: number; b: string; c: number[] }[] | null = []
  for (let i = 0; i < 200_000; i += 1) all.push({ a: i, b: `x${i}`, c: [i, i] })
  gc()
  gc() // all of them in old space now
  const grown = oldSpace()
  const keep = all.filter((_, i) => i % 25 === 0)
  // eslint-disable-next-line no-useless-assignment -- drops the last reference, so the collection below can free them
  all = null
  collect!()
  const after = oldSpace()
  assert.equal(keep.length, 8000)
  assert.ok(after < grown - 10 * MB, `old space ${(grown / MB).toFixed(1)} -> ${(after / MB).toFixed(1)} MB`)
})

it('[memory] V8 gc() is reached without --expose-gc, and no context gets a global gc', () => {
  const gc = fullGc()
  assert.equal(typeof gc, 'function')
  gc!()
  assert.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined')
  assert.equal(runInNewContext('typeof gc'), 'undefined')
})

it('[memory] threads starting together each get gc(), and the flag ends up off', async () => {
  const path = fileURLToPath(new URL('../../../src/worker/memory-footprint.ts', import.meta.url))
  const code = `
    const { parentPort } = require('node:worker_threads')
    const { fullGc } = require('tsx/cjs/api').require(${JSON.stringify(path)}, ${JSON.stringify(fileURLToPath(import.meta.url))})
    let missed = 0
    for (let i = 0; i < 200; i += 1) if (typeof fullGc() !== 'function') missed += 1
    parentPort.postMessage(missed)`
  const threads = Array.from({ length: 4 }, () => new Worker(code, { eval: true }))
  const missed = await Promise.all(
    threads.map((t) => new Promise<number>((resolve, reject) => (t.once('message', resolve), t.once('error', reject)))),
  )
  await Promise.all(threads.map((t) => t.terminate()))
  assert.deepEqual(missed, [0, 0, 0, 0])
  assert.equal(runInNewContext('typeof gc'), 'undefined')
})

it('[memory] an operator-chosen young generation (node option or NODE_OPTIONS) is left alone', () => {
  assert.equal(keepYoungGenerationSmall(['--max-semi-space-size=16'], ''), false)
  assert.equal(keepYoungGenerationSmall([], '--enable-source-maps --semi-space-growth-factor=4'), false)
  assert.equal(keepYoungGenerationSmall(['--min-semi-space-size', '8'], ''), false)
  assert.deepEqual(youngGenerationExecArgv(['--max-semi-space-size=16'], '', {}), [])
})

it('[memory] TSQ_NO_YOUNG_GENERATION or TSQ_NO_TRICKS leaves the young generation to node', () => {
  assert.deepEqual(youngGenerationExecArgv([], '', {}), ['--max-semi-space-size=1'])
  for (const env of [{ TSQ_NO_YOUNG_GENERATION: '1' }, { TSQ_NO_TRICKS: '1' }]) {
    assert.equal(keepYoungGenerationSmall([], '', env), false)
    assert.deepEqual(youngGenerationExecArgv([], '', env), [])
  }
})

/**
 * The young generation (new space) of a worker thread started in a fresh node
 * process, after it has allocated ~100 MB of short-lived objects, in MB; the
 * process first calls keepYoungGenerationSmall() when `keepSmall`.
 */
function threadNewSpaceMb(keepSmall: boolean): number {
  const path = fileURLToPath(new URL('../../../src/worker/memory-footprint.ts', import.meta.url))
  const code = `
    const { Worker } = require('node:worker_threads')
    const { keepYoungGenerationSmall } = require('tsx/cjs/api').require(${JSON.stringify(path)}, ${JSON.stringify(fileURLToPath(import.meta.url))})
    if (${keepSmall} && !keepYoungGenerationSmall([], '', {})) throw new Error('refused')
    const thread = new Worker(\`
      const { parentPort } = require('node:worker_threads')
      const { getHeapSpaceStatistics } = require('node:v8')
      let keep = []
      for (let i = 0; i < 3e6; i += 1) { keep.push({ i }); if (keep.length > 1000) keep = [] }
      parentPort.postMessage(getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size)
    \`, { eval: true })
    thread.once('message', (bytes) => { process.stdout.write(String(bytes)); thread.terminate() })`
  const out = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } })
  assert.equal(out.status, 0, out.stderr)
  return Number(out.stdout) / MB
}

it("[memory] the threads pool's isolates, started after keepYoungGenerationSmall(), keep a small young generation under load", () => {
  // Without it, Node's own limits for a thread let new space grow past 2 MB: the measure below can tell.
  assert.ok(threadNewSpaceMb(false) > 2, 'a thread on node defaults grows its new space')
  const kept = threadNewSpaceMb(true)
  assert.ok(kept <= 2, `new space ${kept} MB`)
})

it(
  '[memory] releaseNativeMemory hands back the pages of freed native buffers that malloc kept (Linux, glibc)',
  { skip: process.platform !== 'linux' && "malloc_trim is glibc's" },
  () => {
    const anonMb = () => Number(/Pss_Anon:\s+(\d+)/.exec(readFileSync('/proc/self/smaps_rollup', 'utf8'))![1]) / 1024
    const gc = fullGc()!
    // 64 MB of 16 KB buffers (under malloc's mmap threshold, so inside an arena), one in 64 kept:
    // the survivors pin the arena's top, so free() alone returns almost none of it.
    const kept: Buffer[] = []
    let buffers: Buffer[] | null = Array.from({ length: 4096 }, (_, i) => Buffer.alloc(16 * 1024, i & 0xff))
    for (let i = 0; i < buffers.length; i += 64) kept.push(buffers[i]!)
    // eslint-disable-next-line no-useless-assignment -- drops the last reference, so the gc() below can free them
    buffers = null
    gc()
    gc()
    const freed = anonMb()
    releaseNativeMemory({})
    const released = anonMb()
    assert.equal(kept.length, 64)
    assert.ok(freed - released > 16, `anonymous memory went from ${freed.toFixed(1)} to ${released.toFixed(1)} MB`)
  },
)
