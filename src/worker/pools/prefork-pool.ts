// Child processes: the only pool that can kill a running task, so hard time
// limits and revoke --terminate really stop the code.
import { fork } from 'node:child_process'
import type { FromSlot } from './slot-messages.js'
import { slotData, slotEntryPath, slotEnv, slotExecArgv, type SlotData, type SlotInit } from './slot-entry.js'
import { SlotPool, type SlotHandle, type SlotPoolOptions } from './slot-pool.js'
import { youngGenerationExecArgv } from '../memory-footprint.js'

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
      execArgv: [...youngGenerationExecArgv(), ...slotExecArgv([modulePath, ...includePaths]), ...profilingArgv()],
      // No secret in the child's environment or argv: its data (broker and backend URLs) comes over the IPC channel.
      env: slotEnv(process.env, index),
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      // Structured clone, as worker threads use: a result with a Map, a Set or a
      // BigInt reaches the worker as it does from a thread, not as JSON's {}.
      serialization: 'advanced',
    })
    // Sent at once, before any job: it waits in the channel for the child to read, no round trip.
    const init: SlotInit = { type: 'slot-init', data: slotData(this.spawnOptions, index) }
    child.send(init, (error) => void error)
    // A child that dies while a message is on its way (EPIPE) is reported by its
    // exit; the error must not take the worker down with it.
    child.on('error', (error) => this.spawnOptions.log?.('warning', `pool process ${child.pid ?? '?'} (index ${index}): ${error.message}`))
    return {
      pid: child.pid ?? -1,
      send: (batch) => {
        if (child.connected) child.send(batch, (error) => void error)
      },
      kill: (signal) => {
        child.kill(signal)
      },
      onMessage: (listener) => child.on('message', (m) => listener(m as FromSlot[])),
      onExit: (listener) => child.once('exit', (code, signal) => listener(code, signal)),
    }
  }
}

/** The worker's own profiling options (`node --cpu-prof bin/run.js worker ...`), so its children are profiled too. */
function profilingArgv(): string[] {
  const argv = process.execArgv
  const out: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (!/^--(cpu|heap)-prof/.test(arg)) continue
    out.push(arg)
    // --cpu-prof-dir DIR: the value as its own argument.
    if (/^--(cpu|heap)-prof-(dir|name|interval)$/.test(arg) && i + 1 < argv.length) out.push(argv[++i]!)
  }
  return out
}
