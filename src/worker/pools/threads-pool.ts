// worker_threads: cheaper than processes, isolated from the main loop, and a
// running task can be ended (the thread is terminated and replaced).
import { Worker } from 'node:worker_threads'
import type { FromSlot } from './slot-messages.js'
import type { SlotSpawnOptions } from './prefork-pool.js'
import { slotData, slotEntryPath, slotExecArgv } from './slot-entry.js'
import { SlotPool, type SlotHandle } from './slot-pool.js'
import { releaseNativeMemory } from '../memory-footprint.js'

/** How long a pool thread may have nothing to do before it exits. */
export const THREAD_IDLE_EXIT_MS = 10_000

export class ThreadsPool extends SlotPool {
  readonly kind = 'threads' as const
  // Each thread is an isolate of its own (5-7 MB with tsq and the task module): started when jobs need it, as Python's ThreadPoolExecutor starts its threads.
  protected override readonly startsLazily = true
  // An idle isolate still holds its heap and tsq's and the app's code: 12-15 MB each after a
  // burst, where Python's idle threads share one interpreter. One idle this long exits, and is
  // started again (about 150 ms) when jobs need it, as Piscina's idleTimeout retires its threads.
  protected override readonly idleExitMs = THREAD_IDLE_EXIT_MS

  constructor(private readonly spawnOptions: SlotSpawnOptions) {
    super(spawnOptions)
  }

  protected spawn(index: number): SlotHandle {
    const { modulePath, includePaths } = this.spawnOptions
    const worker = new Worker(slotEntryPath(), {
      execArgv: slotExecArgv([modulePath, ...includePaths]),
      workerData: slotData(this.spawnOptions, index),
      env: { ...process.env, TSQ_POOL_INDEX: String(index) },
    })
    let exited = false
    worker.once('exit', () => {
      exited = true
      // The thread's malloc arena outlives it, holding what the thread freed: handed back now
      // (the main loop may be idle, and its own idle trim has already run).
      setImmediate(releaseNativeMemory)
    })
    // What escapes the thread ends it (its exit replaces it); unheard, it would end the worker too.
    worker.on('error', (error) => this.spawnOptions.log?.('error', `pool thread ${index}: ${error.stack ?? error.message}`))
    return {
      // Threads share the worker's pid; Celery reports the process either way.
      pid: process.pid,
      threadId: worker.threadId,
      send: (batch) => {
        if (!exited) worker.postMessage(batch)
      },
      kill: () => {
        void worker.terminate()
      },
      onMessage: (listener) => worker.on('message', (m) => listener(m as FromSlot[])),
      onExit: (listener) => worker.once('exit', (code) => listener(code, null)),
    }
  }
}
