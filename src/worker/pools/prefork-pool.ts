// Child processes: the only pool that can kill a running task, so hard time
// limits and revoke --terminate really stop the code.
import { fork, type ChildProcess } from 'node:child_process'
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
    const execArgv = slotProcessArgv([modulePath, ...includePaths])
    const child = takeStartedAhead(execArgv) ?? forkSlot(execArgv, index)
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

/** How a slot process starts: its young generation, tsx when a module needs it, the worker's profiling options. */
function slotProcessArgv(modulePaths: readonly string[]): string[] {
  return [...youngGenerationExecArgv(), ...slotExecArgv(modulePaths), ...profilingArgv()]
}

function forkSlot(execArgv: string[], index: number): ChildProcess {
  return fork(slotEntryPath(), [], {
    execArgv,
    // No secret in the child's environment or argv: its data (broker and backend URLs) comes over the IPC channel.
    env: slotEnv(process.env, index),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    // Structured clone, as worker threads use: a result with a Map, a Set or a
    // BigInt reaches the worker as it does from a thread, not as JSON's {}.
    serialization: 'advanced',
  })
}

/** Slot processes started before their pool: each has Node, tsx and tsq loaded and waits for its slot-init. */
const startedAhead: Array<{ child: ChildProcess; execArgv: string }> = []

/**
 * Starts `count` slot processes for a prefork pool that will load
 * `modulePaths`, before the pool exists (`tsq worker --watch` does, in the
 * process waiting to replace the worker, with the running worker's pool
 * size): the pool takes them instead of starting its own, so starting it
 * costs only the module's load. Their index comes with their slot-init.
 */
export function startSlotsAhead(count: number, modulePaths: readonly string[]): void {
  const execArgv = slotProcessArgv(modulePaths)
  for (let i = 0; i < count; i++) startedAhead.push({ child: forkSlot(execArgv, 0), execArgv: execArgv.join(' ') })
}

/** Those the pool did not take (it has fewer slots, or is not a prefork pool after all) go. */
export function dropSlotsStartedAhead(): void {
  for (const { child } of startedAhead.splice(0)) child.kill()
}

function takeStartedAhead(execArgv: readonly string[]): ChildProcess | undefined {
  const wanted = execArgv.join(' ')
  for (;;) {
    const i = startedAhead.findIndex((s) => s.execArgv === wanted)
    if (i === -1) return undefined
    const { child } = startedAhead.splice(i, 1)[0]!
    if (child.exitCode === null && child.signalCode === null && child.connected) return child
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
