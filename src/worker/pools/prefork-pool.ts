// Child processes: the only pool that can kill a running task, so hard time
// limits and revoke --terminate really stop the code.
import { fork } from 'node:child_process'
import type { FromSlot } from './jobs.js'
import { slotData, slotEntryPath, slotExecArgv, type SlotData } from './slot-entry.js'
import { SlotPool, type SlotHandle, type SlotPoolOptions } from './slot-pool.js'

/** The pool's own options, and what every slot it starts is told. */
export interface SlotSpawnOptions extends SlotPoolOptions, Omit<SlotData, 'index'> {}

export class PreforkPool extends SlotPool {
  readonly kind = 'prefork' as const

  constructor(private readonly spawnOptions: SlotSpawnOptions) {
    super(spawnOptions)
  }

  protected spawn(index: number): SlotHandle {
    const { modulePath, includePaths } = this.spawnOptions
    const child = fork(slotEntryPath(), [], {
      execArgv: slotExecArgv([modulePath, ...includePaths]),
      env: { ...process.env, TSQ_SLOT_DATA: JSON.stringify(slotData(this.spawnOptions, index)), TSQ_POOL_INDEX: String(index) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      // Structured clone, as worker threads use: a result with a Map, a Set or a
      // BigInt reaches the worker as it does from a thread, not as JSON's {}.
      serialization: 'advanced',
    })
    // A child that dies while a message is on its way (EPIPE) is reported by its
    // exit; the error must not take the worker down with it.
    child.on('error', (error) => this.spawnOptions.log?.('warning', `pool process ${child.pid ?? '?'} (index ${index}): ${error.message}`))
    return {
      pid: child.pid ?? -1,
      send: (message) => {
        if (child.connected) child.send(message, (error) => void error)
      },
      kill: (signal) => {
        child.kill(signal)
      },
      onMessage: (listener) => child.on('message', (m) => listener(m as FromSlot)),
      onExit: (listener) => child.once('exit', (code, signal) => listener(code, signal)),
    }
  }
}
